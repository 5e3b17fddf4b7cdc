#pragma once
// Each kind of inputs (plan/input_kind.hpp) as a distribution per tensor (kernels/common/
// inputs.cuh), filled on the device by the support module.
#include "core/input_kind.hpp"
#include "core/problem.hpp"
#include "common/inputs.cuh"  // kernels/common, shared with the device code

namespace attn {

/// d_o: the backward's dO (O's shape), standard normal for every kind.
enum class tensor_role { q, k, v, d_o };

/// The distribution of one tensor of shape s for inputs of kind k.
attn_k::input_fill input_fill_for(input_kind k, tensor_role t, const problem& s);

}  // namespace attn
