// Slurm's switch tree read as racks and switches (see slurm_topology.hpp).
#include "slurm/slurm_topology.hpp"

#include "slurm/slurm_hostlist.hpp"

#include <sstream>
#include <vector>

namespace msomni::slurm {

namespace {

struct switch_line {
  std::string name;
  int level = 0;
  std::string nodes, switches;
};

// The value of `key=` among the words of `line`, "" when absent.
std::string field(const std::string& line, const std::string& key) {
  std::istringstream words(line);
  std::string w;
  while (words >> w)
    if (w.rfind(key + "=", 0) == 0) return w.substr(key.size() + 1);
  return {};
}

}  // namespace

std::map<std::string, node_place> parse_topology(const std::string& text) {
  std::vector<switch_line> switches;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    switch_line s;
    s.name = field(line, "SwitchName");
    if (s.name.empty()) continue;
    const auto level = field(line, "Level");
    if (!level.empty() && (level.size() > 3 || level.find_first_not_of("0123456789") != std::string::npos))
      throw list_error("scontrol show topology: switch " + s.name + " has the level \"" + level + "\"");
    s.level = level.empty() ? 0 : std::stoi(level);
    s.nodes = field(line, "Nodes");
    s.switches = field(line, "Switches");
    switches.push_back(std::move(s));
  }
  // A switch's parent: the switch of the next level whose Switches= names it.
  std::map<std::string, std::string> parent;
  for (const auto& s : switches)
    for (const auto& child : expand_hostlist(s.switches)) parent.emplace(child, s.name);
  std::map<std::string, node_place> out;
  for (const auto& s : switches) {
    if (s.level != 0) continue;
    const auto up = parent.find(s.name);
    for (const auto& node : expand_hostlist(s.nodes))
      out.emplace(node, node_place{s.name, up == parent.end() ? s.name : up->second});
  }
  return out;
}

}  // namespace msomni::slurm
