#pragma once
// Element values for reductions: numbers in a plan dtype, and the test
// values that tensors of parts (plan/plan.h) hold.
//
// Contribution k of element g of tensor t (t its position in the plan) is
// a small integer
//     c(t, g, k) = (splitmix64(g · 2^16 + t + (k + 1) · 2^48) mod 5) − 2
// (u8: without the − 2, so 0..4), and an element that stands for the whole
// tensor holds Σ_k c(t, g, k) over its parts. With at most 63 parts every
// partial sum lies in [−126, 126] (u8: [0, 252]): exact in every dtype, so
// a sum taken in any order is bit-identical to the expected one and a
// missing, doubled or misplaced contribution shows.

#include <cstddef>
#include <cstdint>
#include <span>

#include "plan/plan.h"

namespace meshsim::runtime {

/// `v` in `d` (round to nearest even for f16 and bf16; saturating for integers).
void encode_value(plan::DType d, double v, std::span<std::byte> out);
/// The number `in` holds in `d`.
[[nodiscard]] double decode_value(plan::DType d, std::span<const std::byte> in);

/// c(t, g, part), or the whole Σ_k c(t, g, k) for part < 0.
[[nodiscard]] int test_value(const plan::Tensor& t, std::size_t tensor_index, int part, std::int64_t g);

}  // namespace meshsim::runtime
