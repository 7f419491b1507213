// Where a record sits in the model (parity/record_site.h).
#include "parity/record_site.h"

#include <string_view>

namespace parity {
namespace {

// Position where the "<sep><role>[<sep><index>...]" suffix of a record name starts, or npos. Role words
// as parity captures ("layers.0.attn/forward/output/0", "<module>/backward/grad/weight") and msprobe dumps
// ("Functional.softmax.0.forward.input.0", "...parameters.weight") spell them; the separator is '/' or '.'.
size_t role_suffix_start(std::string_view name, std::string_view role) {
  // One pass from the right over the separators: the first one followed by a role word that ends the name
  // or is followed by the same separator is the latest. Allocates nothing and compares a few short words
  // per separator: it runs for every row, several times (event names and keys).
  const std::string_view fixed[] = {"input", "output", "parameter", "parameters", "grad"};
  for (size_t p = name.size(); p-- > 0;) {
    const char sep = name[p];
    if (sep != '/' && sep != '.') continue;
    const std::string_view rest = name.substr(p + 1);
    auto marks = [&](std::string_view word, bool plural) {
      const size_t len = word.size() + (plural ? 1 : 0);
      if (word.empty() || rest.size() < len || rest.compare(0, word.size(), word) != 0) return false;
      if (plural && rest[word.size()] != 's') return false;
      return rest.size() == len || rest[len] == sep;
    };
    if (marks(role, false) || marks(role, true)) return p;
    for (std::string_view w : fixed)
      if (marks(w, false)) return p;
  }
  return std::string_view::npos;
}


// The directions of docs/dump-format.md "Names" (an optimizer step's records are events of their own).
bool is_direction(std::string_view s) { return s == "forward" || s == "backward" || s == "optimizer"; }

// k of a "<path>#<k>" call name (0 without one, or when what follows '#' is not a number).
int call_number(std::string_view call_name, size_t hash) {
  if (hash == std::string_view::npos || hash == 0) return 0;
  int k = 0;
  for (const char c : call_name.substr(hash + 1)) {
    if (c < '0' || c > '9' || k > 100000000) return 0;
    k = k * 10 + (c - '0');
  }
  return k;
}

// A plain tensor name without its first file extension that ends the name or an archive's file part
// ("a.npz:x" -> "a:x", "x.npy" -> "x"), separators read as dots.
std::string plain_place(std::string_view name) {
  static constexpr std::string_view kExtensions[] = {"npy", "npz", "safetensors", "pt", "pth", "bin", "h5"};
  std::string out(name);
  const auto extension_at = [&](size_t dot) -> size_t {
    for (std::string_view ext : kExtensions) {
      const size_t end = dot + 1 + ext.size();
      if (out.compare(dot + 1, ext.size(), ext) == 0 && (end == out.size() || out[end] == ':')) return ext.size() + 1;
    }
    return 0;
  };
  for (size_t dot = out.find('.'); dot != std::string::npos; dot = out.find('.', dot + 1)) {
    if (const size_t len = extension_at(dot)) {
      out.erase(dot, len);
      break;
    }
  }
  for (char& c : out)
    if (c == '/' || c == ':') c = '.';
  return out;
}

}  // namespace

std::string_view event_stem_of_name(std::string_view name, std::string_view role) {
  const size_t cut = role_suffix_start(name, role);
  if (cut == std::string::npos || cut == 0) return name;
  return name.substr(0, cut);
}

std::string_view event_stem(const Record& r) {
  const std::string_view name = r.name;
  if (r.role.empty()) return name;
  return event_stem_of_name(name, r.role);
}

std::string event_name(const Record& r) { return std::string(event_stem(r)); }

EventSite event_site(const Record& r) {
  const std::string_view name = r.name;
  const size_t s1 = name.find('/');
  const size_t s2 = s1 == std::string_view::npos ? s1 : name.find('/', s1 + 1);
  const std::string_view first = name.substr(0, s1);
  const std::string_view second = s1 == std::string_view::npos ? "" : name.substr(s1 + 1, s2 == std::string_view::npos ? s2 : s2 - s1 - 1);
  const std::string_view third =
      s2 == std::string_view::npos ? "" : name.substr(s2 + 1, name.find('/', s2 + 1) - s2 - 1);
  EventSite site;
  if (s1 != std::string_view::npos && (is_direction(second) || (s2 != std::string_view::npos && is_direction(third)))) {
    const size_t hash = first.rfind('#');
    site.call = call_number(first, hash);
    site.module = !r.module.empty() ? std::string(r.module) : std::string(hash != std::string_view::npos && hash > 0 ? first.substr(0, hash) : first);
    if (!is_direction(second)) site.op = std::string(second);
    return site;
  }
  site.module = !r.module.empty() ? std::string(r.module) : plain_place(name);
  return site;
}

}  // namespace parity
