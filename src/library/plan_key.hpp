#pragma once
// The key of a library context's launch plans. It is made on every forward call, so it is bytes
// (each field appended as it is), not text: problem_key()'s formatting cost about as much as the
// launch. A plan depends on the problem (its kernel, grid and the family's parameter), on the
// tensors' pointers and strides and the scale (fwd_params: hopper's TMA maps hold the
// addresses), on the stream (an eager split-KV plan uses the stream's workspace) and on whether
// the stream was being captured into a CUDA graph (such a plan has a workspace of its own).
#include <string>

#include "codegen/kernel_args.hpp"
#include "core/problem.hpp"

namespace attn {

/// The problem's own bytes: every field of attn::problem (the backward's choices are cached by it).
std::string problem_bytes(const problem& s);
/// problem_bytes(s), then the tensors (params), the stream and whether it is capturing.
std::string plan_key(const problem& s, const attn_k::fwd_params& params, const void* stream, bool capturing);

}  // namespace attn
