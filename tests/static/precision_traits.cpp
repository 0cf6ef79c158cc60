// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Compile-time facts about precision tags, precision policies, loss-scaling policies and op
// precisions. Compiling this file is the test; expected values come from the formats' definitions
// (IEEE 754, bfloat16, TF32) and PyTorch AMP's rules, not from the headers.
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

#include <mpx/mpx.hpp>

namespace {

using mpx::BFloat16;
using mpx::Double;
using mpx::Float;
using mpx::Half;
using mpx::TF32;

template <class A, class B>
constexpr bool same = std::is_same_v<A, B>;

// ---- numeric_traits ----------------------------------------------------------------------------

// The tags, and nothing else, are numeric tags.
static_assert(mpx::NumericTag<Double> && mpx::NumericTag<Float> && mpx::NumericTag<TF32> &&
              mpx::NumericTag<Half> && mpx::NumericTag<BFloat16>);
static_assert(!mpx::NumericTag<int> && !mpx::NumericTag<float> && !mpx::NumericTag<double> &&
              !mpx::NumericTag<Eigen::half> && !mpx::NumericTag<void> && !mpx::NumericTag<mpx::fp32>);

// Storage: TF32 lives in a float; the 16-bit formats in Eigen's types.
static_assert(same<mpx::storage_t<Double>, double>);
static_assert(same<mpx::storage_t<Float>, float>);
static_assert(same<mpx::storage_t<TF32>, float>);
static_assert(same<mpx::storage_t<Half>, Eigen::half>);
static_assert(same<mpx::storage_t<BFloat16>, Eigen::bfloat16>);
// Arithmetic on 16-bit and TF32 values happens in fp32 registers.
static_assert(same<mpx::accumulate_t<Double>, double>);
static_assert(same<mpx::accumulate_t<Float>, float>);
static_assert(same<mpx::accumulate_t<TF32>, float>);
static_assert(same<mpx::accumulate_t<Half>, float>);
static_assert(same<mpx::accumulate_t<BFloat16>, float>);
// 16-bit storage really is 16 bits (bit-compatible with __half / __nv_bfloat16).
static_assert(sizeof(mpx::storage_t<Half>) == 2 && sizeof(mpx::storage_t<BFloat16>) == 2);

static_assert(mpx::numeric_traits<Double>::name == "fp64");
static_assert(mpx::numeric_traits<Float>::name == "fp32");
static_assert(mpx::numeric_traits<TF32>::name == "tf32");
static_assert(mpx::numeric_traits<Half>::name == "fp16");
static_assert(mpx::numeric_traits<BFloat16>::name == "bf16");

// Explicit fraction bits and exponent bits of each format.
template <class Tag, int Mantissa, int Exponent>
constexpr bool has_bits =
    mpx::numeric_traits<Tag>::mantissa_bits == Mantissa&& mpx::numeric_traits<Tag>::exponent_bits == Exponent;
static_assert(has_bits<Double, 52, 11>);
static_assert(has_bits<Float, 23, 8>);
static_assert(has_bits<TF32, 10, 8>);
static_assert(has_bits<Half, 10, 5>);
static_assert(has_bits<BFloat16, 7, 8>);

// Limits written from the formats' definitions: max = (2 - 2^-m) * 2^emax, eps = 2^-m,
// min_normal = 2^(1 - bias).
static_assert(mpx::numeric_traits<Double>::max_finite == std::numeric_limits<double>::max());
static_assert(mpx::epsilon_v<Double> == std::numeric_limits<double>::epsilon());
static_assert(mpx::min_normal_v<Double> == std::numeric_limits<double>::min());
static_assert(mpx::numeric_traits<Float>::max_finite == std::numeric_limits<float>::max());
static_assert(mpx::epsilon_v<Float> == std::numeric_limits<float>::epsilon());
static_assert(mpx::min_normal_v<Float> == std::numeric_limits<float>::min());
static_assert(mpx::numeric_traits<TF32>::max_finite == (2.0f - 0x1p-10f) * 0x1p127f);
static_assert(mpx::epsilon_v<TF32> == 1.0f / 1024.0f);
static_assert(mpx::min_normal_v<TF32> == std::numeric_limits<float>::min());
static_assert(mpx::numeric_traits<Half>::max_finite == (2.0f - 0x1p-10f) * 0x1p15f);
static_assert(mpx::numeric_traits<Half>::max_finite == 65504.0f);
static_assert(mpx::epsilon_v<Half> == 1.0f / 1024.0f);
static_assert(mpx::min_normal_v<Half> == 1.0f / 16384.0f);
static_assert(mpx::numeric_traits<BFloat16>::max_finite == (2.0f - 0x1p-7f) * 0x1p127f);
static_assert(mpx::epsilon_v<BFloat16> == 1.0f / 128.0f);
static_assert(mpx::min_normal_v<BFloat16> == std::numeric_limits<float>::min());
// Each format's epsilon is 2^-mantissa_bits.
template <class Tag>
constexpr bool epsilon_matches_bits =
    mpx::epsilon_v<Tag>* static_cast<double>(1LL << mpx::numeric_traits<Tag>::mantissa_bits) == 1.0;
static_assert(epsilon_matches_bits<Double> && epsilon_matches_bits<Float> && epsilon_matches_bits<TF32> &&
              epsilon_matches_bits<Half> && epsilon_matches_bits<BFloat16>);

// ---- element types <-> tags --------------------------------------------------------------------

static_assert(same<mpx::tag_of_t<double>, Double>);
static_assert(same<mpx::tag_of_t<float>, Float>);  // a TF32 tensor is a float tensor
static_assert(same<mpx::tag_of_t<Eigen::half>, Half>);
static_assert(same<mpx::tag_of_t<Eigen::bfloat16>, BFloat16>);
// storage_t then tag_of_t is the identity except for TF32, which is stored as Float.
static_assert(same<mpx::tag_of_t<mpx::storage_t<TF32>>, Float>);
static_assert(same<mpx::tag_of_t<mpx::storage_t<Half>>, Half>);

static_assert(mpx::FloatingElement<double> && mpx::FloatingElement<float> &&
              mpx::FloatingElement<Eigen::half> && mpx::FloatingElement<Eigen::bfloat16>);
static_assert(!mpx::FloatingElement<std::int32_t> && !mpx::FloatingElement<long double> &&
              !mpx::FloatingElement<Float> && !mpx::FloatingElement<const float>);
// Tensors also hold int32 class labels and token ids; no other integer, and no tag or cv type.
static_assert(mpx::Element<double> && mpx::Element<float> && mpx::Element<Eigen::half> &&
              mpx::Element<Eigen::bfloat16> && mpx::Element<std::int32_t>);
static_assert(!mpx::Element<std::int64_t> && !mpx::Element<std::uint32_t> && !mpx::Element<long double> &&
              !mpx::Element<std::uint16_t> && !mpx::Element<Float> && !mpx::Element<const float> &&
              !mpx::Element<float*> && !mpx::Element<const std::int32_t>);
static_assert(mpx::element_name<std::int32_t> == "int32" && mpx::element_name<float> == "fp32");

// represents_v<Wide, Narrow>: at least as many mantissa and exponent bits.
static_assert(mpx::represents_v<Float, Half> && mpx::represents_v<Float, BFloat16> &&
              mpx::represents_v<Float, TF32>);
static_assert(mpx::represents_v<Double, Float> && mpx::represents_v<Double, Half> &&
              mpx::represents_v<Double, BFloat16>);
static_assert(mpx::represents_v<TF32, Half>);  // 10 mantissa bits each, 8 >= 5 exponent bits
static_assert(mpx::represents_v<Half, Half> && mpx::represents_v<BFloat16, BFloat16>);
static_assert(!mpx::represents_v<Half, BFloat16>);  // fp16 lacks bf16's exponent range
static_assert(!mpx::represents_v<BFloat16, Half>);  // bf16 lacks fp16's mantissa
static_assert(!mpx::represents_v<Half, Float> && !mpx::represents_v<BFloat16, Float> &&
              !mpx::represents_v<TF32, Float>);
static_assert(!mpx::represents_v<Float, Double>);
static_assert(mpx::represents_v<TF32, BFloat16>);  // 10 >= 7 mantissa bits, 8 >= 8 exponent bits

// ---- Precision ---------------------------------------------------------------------------------

// Members of a policy, checked together.
template <class P, class Compute, class Master, class Accumulate>
constexpr bool has_members = same<typename P::compute_type, Compute>&& same<typename P::master_type, Master>&&
    same<typename P::accumulate_type, Accumulate>;

static_assert(same<mpx::fp32, mpx::Precision<Float, Float>>);  // the default master is Float
static_assert(same<mpx::tf32, mpx::Precision<TF32, Float>>);
static_assert(same<mpx::fp16_mixed, mpx::Precision<Half, Float>>);
static_assert(same<mpx::bf16_mixed, mpx::Precision<BFloat16, Float>>);
static_assert(same<mpx::fp64, mpx::Precision<Double, Double>>);

static_assert(has_members<mpx::fp32, Float, Float, Float>);
static_assert(has_members<mpx::tf32, TF32, Float, Float>);
static_assert(has_members<mpx::fp16_mixed, Half, Float, Float>);
static_assert(has_members<mpx::bf16_mixed, BFloat16, Float, Float>);
static_assert(has_members<mpx::fp64, Double, Double, Double>);  // only fp64 accumulates in fp64
static_assert(has_members<mpx::Precision<Half, Half>, Half, Half, Float>);
static_assert(has_members<mpx::Precision<BFloat16, BFloat16>, BFloat16, BFloat16, Float>);

static_assert(mpx::fp32::name == "fp32");
static_assert(mpx::tf32::name == "tf32");
static_assert(mpx::fp16_mixed::name == "fp16_mixed");
static_assert(mpx::bf16_mixed::name == "bf16_mixed");
static_assert(mpx::fp64::name == "fp64");
static_assert(mpx::Precision<Half, Half>::name == "fp16_pure");
static_assert(mpx::Precision<BFloat16, BFloat16>::name == "bf16_pure");

// Pure modes and their rounding-to-nearest twins have names of their own.
static_assert(mpx::bf16_pure::name == "bf16_pure");
static_assert(mpx::bf16_pure_nearest::name == "bf16_pure_nearest");
static_assert(mpx::Precision<Half, Half, mpx::RoundNearest>::name == "fp16_pure_nearest");
static_assert(mpx::Precision<BFloat16, Float, mpx::RoundNearest>::name == "bf16_mixed");

// How optimizers round updated weights into the master type: to nearest where the master is fp32 or
// fp64 (the update is already exact there), stochastically by default for 16-bit masters.
static_assert(same<mpx::fp32::update_rounding, mpx::RoundNearest>);
static_assert(same<mpx::tf32::update_rounding, mpx::RoundNearest>);
static_assert(same<mpx::fp16_mixed::update_rounding, mpx::RoundNearest>);
static_assert(same<mpx::bf16_mixed::update_rounding, mpx::RoundNearest>);
static_assert(same<mpx::fp64::update_rounding, mpx::RoundNearest>);
static_assert(same<mpx::bf16_pure::update_rounding, mpx::RoundStochastic>);
static_assert(same<mpx::bf16_pure_nearest::update_rounding, mpx::RoundNearest>);
static_assert(same<mpx::Precision<Half, Half>::update_rounding, mpx::RoundStochastic>);
static_assert(same<mpx::Precision<Half, Half>, mpx::Precision<Half, Half, mpx::RoundStochastic>>);
static_assert(same<mpx::bf16_pure, mpx::Precision<BFloat16, BFloat16, mpx::RoundStochastic>>);
static_assert(same<mpx::bf16_pure_nearest, mpx::Precision<BFloat16, BFloat16, mpx::RoundNearest>>);
static_assert(!same<mpx::bf16_pure, mpx::bf16_pure_nearest>);
static_assert(same<mpx::default_update_rounding_t<Float>, mpx::RoundNearest>);
static_assert(same<mpx::default_update_rounding_t<Double>, mpx::RoundNearest>);
static_assert(same<mpx::default_update_rounding_t<Half>, mpx::RoundStochastic>);
static_assert(same<mpx::default_update_rounding_t<BFloat16>, mpx::RoundStochastic>);
static_assert(mpx::PrecisionPolicy<mpx::bf16_pure> && mpx::PrecisionPolicy<mpx::bf16_pure_nearest>);
static_assert(!mpx::bf16_pure::has_master_copy && !mpx::bf16_pure_nearest::has_master_copy);
static_assert(same<mpx::master_t<mpx::bf16_pure>, Eigen::bfloat16> &&
              same<mpx::compute_t<mpx::bf16_pure>, Eigen::bfloat16> &&
              same<mpx::accumulate_t<mpx::bf16_pure>, float>);

// A master copy exists when the master type differs from the stored compute type (TF32 is stored as
// fp32, so tf32 has none).
static_assert(!mpx::fp32::has_master_copy);
static_assert(!mpx::tf32::has_master_copy);
static_assert(mpx::fp16_mixed::has_master_copy);
static_assert(mpx::bf16_mixed::has_master_copy);
static_assert(!mpx::fp64::has_master_copy);
static_assert(!mpx::Precision<Half, Half>::has_master_copy);
static_assert(!mpx::Precision<BFloat16, BFloat16>::has_master_copy);

// Element types under a policy.
static_assert(same<mpx::compute_t<mpx::fp32>, float> && same<mpx::master_t<mpx::fp32>, float> &&
              same<mpx::accumulate_t<mpx::fp32>, float>);
static_assert(same<mpx::compute_t<mpx::tf32>, float> && same<mpx::master_t<mpx::tf32>, float> &&
              same<mpx::accumulate_t<mpx::tf32>, float>);
static_assert(same<mpx::compute_t<mpx::fp16_mixed>, Eigen::half> &&
              same<mpx::master_t<mpx::fp16_mixed>, float> && same<mpx::accumulate_t<mpx::fp16_mixed>, float>);
static_assert(same<mpx::compute_t<mpx::bf16_mixed>, Eigen::bfloat16> &&
              same<mpx::master_t<mpx::bf16_mixed>, float> && same<mpx::accumulate_t<mpx::bf16_mixed>, float>);
static_assert(same<mpx::compute_t<mpx::fp64>, double> && same<mpx::master_t<mpx::fp64>, double> &&
              same<mpx::accumulate_t<mpx::fp64>, double>);
static_assert(same<mpx::compute_t<mpx::Precision<BFloat16, BFloat16>>, Eigen::bfloat16> &&
              same<mpx::master_t<mpx::Precision<BFloat16, BFloat16>>, Eigen::bfloat16> &&
              same<mpx::accumulate_t<mpx::Precision<BFloat16, BFloat16>>, float>);

// PrecisionPolicy: specialisations of Precision only, not look-alikes.
struct LookAlike {
  using compute_type = Float;
  using master_type = Float;
  using accumulate_type = Float;
};
static_assert(mpx::PrecisionPolicy<mpx::fp32> && mpx::PrecisionPolicy<mpx::tf32> &&
              mpx::PrecisionPolicy<mpx::fp16_mixed> && mpx::PrecisionPolicy<mpx::bf16_mixed> &&
              mpx::PrecisionPolicy<mpx::fp64> && mpx::PrecisionPolicy<mpx::Precision<Half, Half>>);
static_assert(!mpx::PrecisionPolicy<LookAlike> && !mpx::PrecisionPolicy<Float> &&
              !mpx::PrecisionPolicy<int> && !mpx::PrecisionPolicy<const mpx::fp32>);

// ---- loss scaling ------------------------------------------------------------------------------

using mpx::AllowFp16Underflow;
using mpx::DynamicLossScaling;
using mpx::NoLossScaling;
using mpx::StaticLossScaling;
using OptIn = AllowFp16Underflow<NoLossScaling>;

static_assert(mpx::LossScalingPolicy<DynamicLossScaling> && mpx::LossScalingPolicy<StaticLossScaling> &&
              mpx::LossScalingPolicy<NoLossScaling> && mpx::LossScalingPolicy<OptIn>);
static_assert(!mpx::LossScalingPolicy<int> && !mpx::LossScalingPolicy<mpx::fp16_mixed> &&
              !mpx::LossScalingPolicy<LookAlike>);

static_assert(DynamicLossScaling::scales_loss && DynamicLossScaling::is_dynamic);
static_assert(StaticLossScaling::scales_loss && !StaticLossScaling::is_dynamic);
static_assert(!NoLossScaling::scales_loss && !NoLossScaling::is_dynamic);
static_assert(!OptIn::scales_loss && !OptIn::is_dynamic && OptIn::allows_fp16_underflow);
static_assert(DynamicLossScaling::name == "dynamic" && StaticLossScaling::name == "static" &&
              NoLossScaling::name == "none" && OptIn::name == "none_fp16_opt_in");
// NoLossScaling's placeholder knobs (there only to turn `.init_scale = ...` into a clear error) keep
// its options a default-constructible, trivially copyable aggregate (a CUDA kernel takes them by
// value) of one byte per placeholder.
static_assert(std::is_trivially_copyable_v<NoLossScaling::Options> &&
              std::is_aggregate_v<NoLossScaling::Options> &&
              std::is_trivially_default_constructible_v<NoLossScaling::Options> &&
              sizeof(NoLossScaling::Options) == 8);

// fp16 gets GradScaler by default; formats with fp32's exponent range need no scaling.
static_assert(same<mpx::default_scaler_t<mpx::fp16_mixed>, DynamicLossScaling>);
static_assert(same<mpx::default_scaler_t<mpx::Precision<Half, Half>>, DynamicLossScaling>);
static_assert(same<mpx::default_scaler_t<mpx::fp32>, NoLossScaling>);
static_assert(same<mpx::default_scaler_t<mpx::tf32>, NoLossScaling>);
static_assert(same<mpx::default_scaler_t<mpx::bf16_mixed>, NoLossScaling>);
static_assert(same<mpx::default_scaler_t<mpx::Precision<BFloat16, BFloat16>>, NoLossScaling>);
static_assert(same<mpx::default_scaler_t<mpx::fp64>, NoLossScaling>);

// scaler_suits_v truth table: every scaler suits every precision, except that fp16 compute without
// scaling needs the explicit opt-in; a non-scaler suits nothing.
template <class P, bool Dynamic, bool Static, bool None, bool NoneOptIn>
constexpr bool suits_row =
    mpx::scaler_suits_v<P, DynamicLossScaling> == Dynamic&& mpx::scaler_suits_v<P, StaticLossScaling> ==
        Static&& mpx::scaler_suits_v<P, NoLossScaling> == None&& mpx::scaler_suits_v<P, OptIn> == NoneOptIn &&
    !mpx::scaler_suits_v<P, int> && !mpx::scaler_suits_v<P, LookAlike>;
static_assert(suits_row<mpx::fp32, true, true, true, true>);
static_assert(suits_row<mpx::tf32, true, true, true, true>);
static_assert(suits_row<mpx::fp16_mixed, true, true, false, true>);
static_assert(suits_row<mpx::Precision<Half, Half>, true, true, false, true>);
static_assert(suits_row<mpx::bf16_mixed, true, true, true, true>);
static_assert(suits_row<mpx::Precision<BFloat16, BFloat16>, true, true, true, true>);
static_assert(suits_row<mpx::fp64, true, true, true, true>);
// The default scaler always suits its precision.
static_assert(mpx::scaler_suits_v<mpx::fp16_mixed, mpx::default_scaler_t<mpx::fp16_mixed>> &&
              mpx::scaler_suits_v<mpx::bf16_mixed, mpx::default_scaler_t<mpx::bf16_mixed>> &&
              mpx::scaler_suits_v<mpx::fp32, mpx::default_scaler_t<mpx::fp32>> &&
              mpx::scaler_suits_v<mpx::tf32, mpx::default_scaler_t<mpx::tf32>> &&
              mpx::scaler_suits_v<mpx::fp64, mpx::default_scaler_t<mpx::fp64>>);

// checked_scaler_t passes a suitable scaler through unchanged and defaults to default_scaler_t.
static_assert(same<mpx::checked_scaler_t<mpx::fp16_mixed>, DynamicLossScaling>);
static_assert(same<mpx::checked_scaler_t<mpx::bf16_mixed>, NoLossScaling>);
static_assert(same<mpx::checked_scaler_t<mpx::fp32>, NoLossScaling>);
static_assert(same<mpx::checked_scaler_t<mpx::fp64>, NoLossScaling>);
static_assert(same<mpx::checked_scaler_t<mpx::fp16_mixed, StaticLossScaling>, StaticLossScaling>);
static_assert(same<mpx::checked_scaler_t<mpx::fp16_mixed, OptIn>, OptIn>);
static_assert(same<mpx::checked_scaler_t<mpx::bf16_mixed, DynamicLossScaling>, DynamicLossScaling>);
static_assert(same<mpx::checked_scaler_t<mpx::tf32, StaticLossScaling>, StaticLossScaling>);
static_assert(same<mpx::checked_scaler_t<mpx::tf32, OptIn>, OptIn>);

// ---- op_precision ------------------------------------------------------------------------------

// Storage and accumulate tags of one op kind under one policy.
template <class Op, class P, class Storage, class Accumulate>
constexpr bool op_is =
    same<mpx::op_storage_t<Op, P>, Storage>&& same<mpx::op_accumulate_t<Op, P>, Accumulate>&&
        same<typename mpx::op_precision<Op, P>::storage, Storage>&&
            same<typename mpx::op_precision<Op, P>::accumulate, Accumulate>;

// The autocast "fp32 list": softmax, log-softmax, losses, norm statistics and reductions are stored
// and computed in the accumulate type (fp32; fp64 under fp64), whatever the compute type.
template <class P, class Acc>
constexpr bool fp32_ops_are = op_is<mpx::op::Softmax, P, Acc, Acc>&& op_is<mpx::op::LogSoftmax, P, Acc, Acc>&&
    op_is<mpx::op::Loss, P, Acc, Acc>&& op_is<mpx::op::NormStatistics, P, Acc, Acc>&&
        op_is<mpx::op::Reduction, P, Acc, Acc>;

static_assert(op_is<mpx::op::Matmul, mpx::fp32, Float, Float>);
static_assert(op_is<mpx::op::Activation, mpx::fp32, Float, Float>);
static_assert(op_is<mpx::op::OptimizerUpdate, mpx::fp32, Float, Float>);
static_assert(fp32_ops_are<mpx::fp32, Float>);

static_assert(op_is<mpx::op::Matmul, mpx::tf32, TF32, Float>);
static_assert(op_is<mpx::op::Activation, mpx::tf32, TF32, Float>);
static_assert(op_is<mpx::op::OptimizerUpdate, mpx::tf32, Float, Float>);
static_assert(fp32_ops_are<mpx::tf32, Float>);

static_assert(op_is<mpx::op::Matmul, mpx::fp16_mixed, Half, Float>);
static_assert(op_is<mpx::op::Activation, mpx::fp16_mixed, Half, Float>);
static_assert(op_is<mpx::op::OptimizerUpdate, mpx::fp16_mixed, Float, Float>);
static_assert(fp32_ops_are<mpx::fp16_mixed, Float>);

static_assert(op_is<mpx::op::Matmul, mpx::bf16_mixed, BFloat16, Float>);
static_assert(op_is<mpx::op::Activation, mpx::bf16_mixed, BFloat16, Float>);
static_assert(op_is<mpx::op::OptimizerUpdate, mpx::bf16_mixed, Float, Float>);
static_assert(fp32_ops_are<mpx::bf16_mixed, Float>);

static_assert(op_is<mpx::op::Matmul, mpx::fp64, Double, Double>);
static_assert(op_is<mpx::op::Activation, mpx::fp64, Double, Double>);
static_assert(op_is<mpx::op::OptimizerUpdate, mpx::fp64, Double, Double>);
static_assert(fp32_ops_are<mpx::fp64, Double>);

// Pure bf16: the optimizer updates bf16 master weights, but its math is still fp32.
using Bf16Pure = mpx::Precision<BFloat16, BFloat16>;
static_assert(op_is<mpx::op::Matmul, Bf16Pure, BFloat16, Float>);
static_assert(op_is<mpx::op::Activation, Bf16Pure, BFloat16, Float>);
static_assert(op_is<mpx::op::OptimizerUpdate, Bf16Pure, BFloat16, Float>);
static_assert(fp32_ops_are<Bf16Pure, Float>);

}  // namespace

int main() {
  return 0;
}

// Names joined from the formats' names are NUL-terminated, as the literals are: `name.data()` prints
// with %s.
static_assert(mpx::bf16_mixed::name == "bf16_mixed" && mpx::bf16_mixed::name.data()[10] == '\0');
static_assert(mpx::bf16_pure::name == "bf16_pure" && mpx::bf16_pure::name.data()[9] == '\0');
