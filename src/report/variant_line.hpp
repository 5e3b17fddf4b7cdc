#pragma once
// -v/--verbose: one variant's news as it happens (compiled, verified, screened, measured), as
// text for the terminal. Pure: the tuner says when, the command line where.
#include <string>

#include "core/record.hpp"

namespace attn {

enum class variant_event { compiled, verified, screened, measured };

/// "compiled fa2 m64_n64_w4_s1: 96 registers, 0 spill bytes, 24.0 KiB shared memory, 412 ms" and
/// the compiler's log below it, indented; "verified ...: ok, max error ... (allowed ..., naive
/// bound)"; "screened ...: 1.2345 ms +-0.8% (IQR ..., 20 reps), 123.4 TFLOPS". A failure says so
/// with its message. No final newline.
std::string variant_line(variant_event event, const record& r, const std::string& log = "");

}  // namespace attn
