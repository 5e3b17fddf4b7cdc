#pragma once
// A small JSON reader for the tables attn-tune writes itself (export --format json): objects,
// arrays, strings with simple escapes, numbers, true/false/null. Not a general-purpose parser.
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace attn {

struct json_value {
  enum class kind { null, boolean, number, string, array, object } type = kind::null;
  bool boolean = false;
  double number = 0;
  std::string text;
  std::vector<json_value> items;
  std::map<std::string, json_value> fields;

  /// The field `name` of an object; throws invalid_input naming it when it is missing.
  const json_value& at(const std::string& name) const;
  bool has(const std::string& name) const { return fields.count(name) != 0; }
};

/// Throws invalid_input naming `what` and the offset of the first character it cannot read.
json_value parse_json(const std::string& text, const std::string& what);

}  // namespace attn
