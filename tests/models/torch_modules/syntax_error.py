"""A module file with a syntax error on line 4, for the torch backend's refusal tests."""
import torch.nn as nn

class Model(nn.Module)
    pass
