// json.hpp: nlohmann-json as every attnlab source includes it (never <nlohmann/json.hpp>
// directly: one definition of the library's checks in every translation unit).
//
// The library leaves some reads undefined and only asserts them: a const json's operator[] with
// a key it lacks, or an index past an array's end. A result file edited by hand (demo replot)
// can ask for such reads. Here the assertion is always on and throws std::out_of_range, so that
// such a file is refused with a message instead of being read past the end.
#pragma once

#include <stdexcept>
#include <string>

namespace attn {
[[noreturn]] inline void json_read_undefined(const char* condition) {
  throw std::out_of_range(std::string("a JSON field that is not there or a list too short (") +
                          condition + ")");
}
}  // namespace attn

#ifdef JSON_ASSERT
#error "host/json.hpp defines JSON_ASSERT: include it before anything that includes nlohmann-json"
#endif
#define JSON_ASSERT(x) ((x) ? static_cast<void>(0) : ::attn::json_read_undefined(#x))
#include <nlohmann/json.hpp>
