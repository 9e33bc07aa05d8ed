"""A module file whose import fails on line 5, for the torch backend's refusal tests."""
import torch.nn as nn


import msomni_test_no_such_package  # noqa: F401  (line 5: the refusal must name it)


class Model(nn.Module):
    pass
