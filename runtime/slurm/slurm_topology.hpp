// Where each node sits, as Slurm's topology/tree plugin describes it (`scontrol show
// topology`): a node's leaf switch is its rack (the nodes one top-of-rack switch joins) and
// that switch's parent its switch; a leaf switch without a parent is both. Pure text parsing.
#pragma once

#include <map>
#include <string>

namespace msomni::slurm {

struct node_place {
  std::string rack;
  std::string switch_name;
};

// Node name -> place, from the text of `scontrol show topology` (one "SwitchName=... Level=N
// ... Nodes=LIST [Switches=LIST]" per line). Nodes under no leaf switch are left out; text
// without any switch line gives an empty map. Throws slurm::list_error for an unreadable list.
std::map<std::string, node_place> parse_topology(const std::string& text);

}  // namespace msomni::slurm
