// SPDX-License-Identifier: Apache-2.0
// SPDX-FileCopyrightText: 2026 The mpx authors
// Shape, Tensor<T, Host>, host memory accounting, and convert/round_into with round-to-nearest.
// Expected values are written from the formats' definitions (bits of mantissa, ties-to-even, the
// Tensor Core's ties-away TF32 rule), never computed with the code under test.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "../support/error_matchers.hpp"

#include <mpx/tensor/convert.hpp>
#include <mpx/tensor/memory_stats.hpp>
#include <mpx/tensor/shape.hpp>
#include <mpx/tensor/tensor.hpp>
#include <mpx/tensor/transfer.hpp>

// This file's own namespace: the unity build compiles several test files as one translation
// unit (MPX_UNITY_ID, tests/CMakeLists.txt).
namespace {
namespace MPX_UNITY_ID {

namespace {

using mpx::Shape;
using mpx::Tensor;

using mpx::test::MessageContains;

/// An element of type T holding `value` (exact for the values these tests use).
template <class T>
T element(double value) {
  if constexpr (std::is_same_v<T, double>) {
    return value;
  } else {
    return static_cast<T>(static_cast<float>(value));
  }
}

/// An element's value, widened exactly to double.
template <class T>
double value_of(T x) {
  if constexpr (std::is_same_v<T, double>) {
    return x;
  } else {
    return static_cast<double>(static_cast<float>(x));
  }
}

template <class T>
bool is_aligned_64(const T* pointer) {
  return reinterpret_cast<std::uintptr_t>(pointer) % 64 == 0;
}

template <class T>
bool all_bytes_zero(const Tensor<T>& tensor) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(tensor.data());
  return std::all_of(bytes, bytes + tensor.size_bytes(), [](unsigned char b) { return b == 0; });
}

mpx::MemoryStats& host_stats() {
  return mpx::memory_stats<mpx::Host>();
}

}  // namespace

// ---- Shape -------------------------------------------------------------------------------------

TEST_CASE("Shape of rank 1 to 4 reports rank, extents, rows, cols and numel", "[shape]") {
  const Shape s1{5};
  CHECK(s1.rank() == 1);
  CHECK(s1[0] == 5);
  CHECK(s1.rows() == 1);  // empty product: a vector is one row
  CHECK(s1.cols() == 5);
  CHECK(s1.numel() == 5);

  const Shape s2{2, 3};
  CHECK(s2.rank() == 2);
  CHECK(s2[0] == 2);
  CHECK(s2[1] == 3);
  CHECK(s2.rows() == 2);
  CHECK(s2.cols() == 3);
  CHECK(s2.numel() == 6);

  const Shape s3{2, 3, 4};
  CHECK(s3.rank() == 3);
  CHECK(s3[2] == 4);
  CHECK(s3.rows() == 6);  // leading dimensions fold into rows
  CHECK(s3.cols() == 4);
  CHECK(s3.numel() == 24);

  const Shape s4{2, 3, 4, 5};
  CHECK(s4.rank() == 4);
  CHECK(s4[3] == 5);
  CHECK(s4.rows() == 24);
  CHECK(s4.cols() == 5);
  CHECK(s4.numel() == 120);
}

TEST_CASE("Shape with a zero extent has no elements, default Shape has rank 0", "[shape]") {
  const Shape zero{3, 0};
  CHECK(zero.rank() == 2);
  CHECK(zero.numel() == 0);
  CHECK(zero.rows() == 3);
  CHECK(zero.cols() == 0);

  const Shape none;
  CHECK(none.rank() == 0);
  CHECK(none.numel() == 0);
  CHECK(none.rows() == 0);
  CHECK(none.cols() == 0);
  CHECK(none.to_string() == "[]");
}

TEST_CASE("Shape rejects rank 0, rank 5 and negative extents with shape_error", "[shape]") {
  CHECK_THROWS_MATCHES(Shape(std::initializer_list<std::int64_t>{}), mpx::shape_error,
                       MessageContains({"mpx::Shape", "rank 0 is not supported", "rank 1 to 4"}));
  CHECK_THROWS_MATCHES((Shape{1, 2, 3, 4, 5}), mpx::shape_error,
                       MessageContains({"mpx::Shape", "rank 5 is not supported", "rank 1 to 4"}));
  CHECK_THROWS_MATCHES((Shape{2, -3}), mpx::shape_error,
                       MessageContains({"mpx::Shape", "extent -3 at dimension 1 is negative"}));
  CHECK_THROWS_MATCHES((Shape{-1}), mpx::shape_error, MessageContains({"extent -1 at dimension 0"}));
  // shape_error is an mpx::error, so callers can catch every mpx failure at once.
  CHECK_THROWS_AS((Shape{-7, 2}), mpx::error);
}

TEST_CASE("Shape indexing counts negative dimensions from the back", "[shape]") {
  const Shape shape{2, 3, 4};
  CHECK(shape[-1] == 4);
  CHECK(shape[-2] == 3);
  CHECK(shape[-3] == 2);
  CHECK_THROWS_MATCHES(shape[3], mpx::shape_error,
                       MessageContains({"dimension 3 is out of range for shape [2, 3, 4]"}));
  CHECK_THROWS_MATCHES(shape[-4], mpx::shape_error,
                       MessageContains({"dimension -4 is out of range for shape [2, 3, 4]"}));
  CHECK_THROWS_AS(Shape{}[0], mpx::shape_error);
}

TEST_CASE("Shape prints as a bracketed, comma-separated list and compares by extents", "[shape]") {
  CHECK(Shape{7}.to_string() == "[7]");
  CHECK(Shape{2, 3}.to_string() == "[2, 3]");
  CHECK(Shape{1, 2, 3, 4}.to_string() == "[1, 2, 3, 4]");
  CHECK(Shape{0, 12}.to_string() == "[0, 12]");
  std::ostringstream out;
  out << Shape{4, 5};
  CHECK(out.str() == "[4, 5]");

  CHECK(Shape{2, 3} == Shape{2, 3});
  CHECK_FALSE(Shape{2, 3} == Shape{3, 2});
  CHECK_FALSE(Shape{6} == Shape{6, 1});  // same numel, different rank
  CHECK_FALSE(Shape{} == Shape{0});
}

// ---- Tensor ------------------------------------------------------------------------------------

TEMPLATE_TEST_CASE("Tensor(shape) is zero-filled and sized by its element type", "[tensor]", double, float,
                   Eigen::half, Eigen::bfloat16) {
  // Byte widths written out: fp64 8, fp32 4, fp16 and bf16 2.
  constexpr std::size_t width = std::is_same_v<TestType, double>  ? 8
                                : std::is_same_v<TestType, float> ? 4
                                                                  : 2;
  {
    // Dirty a block of the same size first, so that a missing zero fill shows up if the allocator
    // hands the same memory back.
    Tensor<TestType> dirty(Shape{10, 100});
    dirty.fill(element<TestType>(3.0));
  }
  const Tensor<TestType> tensor(Shape{10, 100});
  CHECK(tensor.shape() == Shape{10, 100});
  CHECK(tensor.rank() == 2);
  CHECK(tensor.numel() == 1000);
  CHECK(tensor.size_bytes() == 1000 * width);
  CHECK_FALSE(tensor.empty());
  REQUIRE(tensor.data() != nullptr);
  CHECK(all_bytes_zero(tensor));  // +0 in every format
}

TEMPLATE_TEST_CASE("Tensor data is 64-byte aligned for odd sizes and ranks", "[tensor]", double, float,
                   Eigen::half, Eigen::bfloat16) {
  // All kept alive at once so that each comes from a different block.
  std::vector<Tensor<TestType>> tensors;
  for (const std::int64_t n : {1, 3, 7, 17, 63, 65, 127, 1001}) {
    tensors.emplace_back(Shape{n});
    tensors.push_back(Tensor<TestType>::uninitialized(Shape{n, 3}));
    tensors.emplace_back(Shape{3, n, 5});
  }
  tensors.push_back(tensors.back().clone());
  for (const auto& tensor : tensors) {
    CAPTURE(tensor.shape());
    REQUIRE(tensor.data() != nullptr);
    CHECK(is_aligned_64(tensor.data()));
  }
}

TEST_CASE("Tensor::uninitialized allocates the full shape", "[tensor]") {
  auto tensor = Tensor<float>::uninitialized(Shape{3, 5});
  CHECK(tensor.shape() == Shape{3, 5});
  CHECK(tensor.size_bytes() == 60);
  REQUIRE(tensor.data() != nullptr);
  tensor.fill(1.5f);
  CHECK(tensor[14] == 1.5f);
}

TEST_CASE("Moving a tensor transfers its memory and leaves the source empty", "[tensor]") {
  Tensor<float> source(Shape{4, 8});
  source[5] = 2.0f;
  float* const memory = source.data();

  Tensor<float> moved(std::move(source));
  CHECK(moved.data() == memory);
  CHECK(moved.shape() == Shape{4, 8});
  CHECK(moved[5] == 2.0f);
  CHECK(source.data() == nullptr);  // NOLINT(bugprone-use-after-move): checking the moved-from state
  CHECK(source.rank() == 0);
  CHECK(source.numel() == 0);
  CHECK(source.size_bytes() == 0);
  CHECK(source.empty());

  // Move assignment into a tensor that owns memory frees that memory and takes the other's.
  Tensor<float> target(Shape{100});
  const std::int64_t live_before = host_stats().live_bytes();
  target = std::move(moved);
  CHECK(host_stats().live_bytes() == live_before - 400);
  CHECK(target.data() == memory);
  CHECK(target.shape() == Shape{4, 8});
  CHECK(moved.data() == nullptr);  // NOLINT(bugprone-use-after-move)
  CHECK(moved.shape() == Shape{});

  // Self-move-assignment (through an alias) must not free the memory.
  Tensor<float>& alias = target;
  target = std::move(alias);
  CHECK(target.data() == memory);
  CHECK(target[5] == 2.0f);
  CHECK(host_stats().live_bytes() == live_before - 400);
}

TEST_CASE("clone() copies the elements into new memory", "[tensor]") {
  Tensor<Eigen::bfloat16> original(Shape{3, 7});
  for (std::int64_t i = 0; i < original.numel(); ++i)
    original[i] = element<Eigen::bfloat16>(static_cast<double>(i));

  const std::int64_t live_before = host_stats().live_bytes();
  Tensor<Eigen::bfloat16> copy = original.clone();
  CHECK(host_stats().live_bytes() == live_before + 42);
  CHECK(copy.shape() == original.shape());
  CHECK(copy.data() != original.data());
  for (std::int64_t i = 0; i < copy.numel(); ++i) CHECK(value_of(copy[i]) == static_cast<double>(i));

  // Writing to one does not change the other.
  copy[0] = element<Eigen::bfloat16>(-1.0);
  original[1] = element<Eigen::bfloat16>(-2.0);
  CHECK(value_of(original[0]) == 0.0);
  CHECK(value_of(copy[1]) == 1.0);

  const Tensor<float> empty;
  const Tensor<float> empty_copy = empty.clone();
  CHECK(empty_copy.data() == nullptr);
  CHECK(empty_copy.empty());
}

TEST_CASE("reshape reinterprets the same elements and rejects a different count", "[tensor]") {
  Tensor<float> tensor(Shape{2, 3});
  for (std::int64_t i = 0; i < 6; ++i) tensor[i] = static_cast<float>(i);
  const float* memory = tensor.data();

  tensor.reshape(Shape{3, 2});
  CHECK(tensor.shape() == Shape{3, 2});
  CHECK(tensor.data() == memory);
  CHECK(tensor.matrix()(1, 0) == 2.0f);  // row-major: element 2 starts row 1 of a 3 x 2 view
  tensor.reshape(Shape{1, 2, 3});
  CHECK(tensor.matrix().rows() == 2);
  CHECK(tensor.matrix()(1, 0) == 3.0f);
  tensor.reshape(Shape{6});
  CHECK(tensor.shape() == Shape{6});

  CHECK_THROWS_MATCHES(tensor.reshape(Shape{4, 2}), mpx::shape_error,
                       MessageContains({"mpx::Tensor::reshape", "[6] (6 elements)", "[4, 2] (8 elements)"}));
  CHECK(tensor.shape() == Shape{6});  // unchanged after the failed reshape
  CHECK_THROWS_AS(tensor.reshape(Shape{}), mpx::shape_error);
}

TEST_CASE("matrix() and vector() are row-major views of the tensor's memory", "[tensor]") {
  Tensor<double> tensor(Shape{2, 3, 4});
  auto matrix = tensor.matrix();
  CHECK(matrix.rows() == 6);
  CHECK(matrix.cols() == 4);
  CHECK(matrix.data() == tensor.data());

  tensor[1] = 7.0;  // flat index 1 is row 0, column 1
  CHECK(matrix(0, 1) == 7.0);
  matrix(2, 3) = 5.0;  // row 2, column 3 is flat index 2 * 4 + 3
  CHECK(tensor[11] == 5.0);

  auto vector = tensor.vector();
  CHECK(vector.size() == 24);
  CHECK(vector.data() == tensor.data());
  vector(23) = -1.0;
  CHECK(tensor[23] == -1.0);
  CHECK(vector(11) == 5.0);

  const Tensor<double>& view = tensor;
  CHECK(view.matrix().data() == tensor.data());
  CHECK(view.matrix()(5, 3) == -1.0);
  CHECK(view.vector()(1) == 7.0);

  // Eigen expressions through the view write the tensor's elements.
  tensor.matrix().setConstant(0.25);
  CHECK(tensor[0] == 0.25);
  CHECK(tensor[23] == 0.25);
}

TEMPLATE_TEST_CASE("fill sets every element and values() spans them in order", "[tensor]", double, float,
                   Eigen::half, Eigen::bfloat16) {
  Tensor<TestType> tensor(Shape{3, 5, 7});
  tensor.fill(element<TestType>(2.5));
  const auto values = std::as_const(tensor).values();
  CHECK(values.size() == 105);
  CHECK(values.data() == tensor.data());
  CHECK(std::all_of(values.begin(), values.end(), [](TestType x) { return value_of(x) == 2.5; }));

  tensor.values()[104] = element<TestType>(-4.0);
  CHECK(value_of(tensor[104]) == -4.0);
  CHECK(value_of(tensor[103]) == 2.5);
}

// ---- Memory accounting -------------------------------------------------------------------------

TEST_CASE("Host live bytes rise and fall by exactly each tensor's size", "[tensor][memory]") {
  const std::int64_t base = host_stats().live_bytes();
  {
    const Tensor<float> a(Shape{3, 5});  // 15 * 4 bytes
    CHECK(host_stats().live_bytes() == base + 60);
    {
      const Tensor<Eigen::half> b(Shape{7});  // 7 * 2 bytes
      CHECK(host_stats().live_bytes() == base + 74);
      const Tensor<double> c(Shape{2, 2, 2, 2});  // 16 * 8 bytes
      CHECK(host_stats().live_bytes() == base + 202);
    }
    CHECK(host_stats().live_bytes() == base + 60);
  }
  CHECK(host_stats().live_bytes() == base);
}

TEST_CASE("Tensor::view aliases elements it does not own and never frees them", "[tensor][memory]") {
  Tensor<float> owner(Shape{64});
  for (std::int64_t i = 0; i < 64; ++i) owner[i] = static_cast<float>(i);
  const std::int64_t base = host_stats().live_bytes();
  const std::int64_t allocations = host_stats().allocation_count();
  {
    auto view = Tensor<float>::view(owner.data() + 16, Shape{4, 4});  // 64 bytes in: still 64-aligned
    CHECK_FALSE(view.owns_elements());
    CHECK(owner.owns_elements());
    CHECK(view.data() == owner.data() + 16);
    CHECK(view.shape() == Shape{4, 4});
    CHECK(view[0] == 16.0f);
    view[1] = -1.0f;  // writes through to the owner
    CHECK(owner[17] == -1.0f);
    CHECK(view.matrix()(1, 2) == 22.0f);
    auto moved = std::move(view);  // a moved view stays a view
    CHECK_FALSE(moved.owns_elements());
    CHECK(view.owns_elements());  // the moved-from tensor is an empty owner
    CHECK(view.empty());
    const auto copy = moved.clone();  // a clone owns its own copy
    CHECK(copy.owns_elements());
    CHECK(copy[1] == -1.0f);
    CHECK(host_stats().live_bytes() == base + 64);
  }
  CHECK(host_stats().live_bytes() == base);  // only the clone was freed
  CHECK(host_stats().allocation_count() == allocations + 1);
  CHECK(owner[16] == 16.0f);
  // A view may start at any element: its maps assume no alignment.
  const auto odd = Tensor<float>::view(owner.data() + 1, Shape{2, 3});
  CHECK(odd.matrix()(1, 2) == 6.0f);
  CHECK(odd.vector().sum() == 1.0f + 2.0f + 3.0f + 4.0f + 5.0f + 6.0f);
}

TEST_CASE("Tensor::rows is a view of a range of rows, checked against the first extent", "[tensor][memory]") {
  Tensor<float> batch(Shape{5, 3, 2});  // 5 rows of 6 elements
  for (std::int64_t i = 0; i < batch.numel(); ++i) batch[i] = static_cast<float>(i);
  const std::int64_t allocations = host_stats().allocation_count();
  auto middle = batch.rows(1, 3);
  CHECK_FALSE(middle.owns_elements());
  CHECK(middle.shape() == Shape{3, 3, 2});
  CHECK(middle.data() == batch.data() + 6);  // 24 bytes in: not 64-byte aligned, and usable
  CHECK(middle.matrix()(0, 0) == 6.0f);      // the matrix view folds [3, 3] into 9 rows
  CHECK(middle.matrix()(8, 1) == 23.0f);
  middle[0] = -1.0f;  // writes reach the batch
  CHECK(batch[6] == -1.0f);
  const Tensor<float>& read_only = batch;
  const auto last = read_only.rows(4, 1);
  CHECK(last.shape() == Shape{1, 3, 2});
  CHECK(last[5] == 29.0f);
  CHECK(read_only.rows(5, 0).empty());                    // an empty range at the end exists
  CHECK(host_stats().allocation_count() == allocations);  // no copy, no allocation
  // Rows that do not exist are refused, naming the range and the shape.
  CHECK_THROWS_AS(batch.rows(4, 2), mpx::shape_error);
  CHECK_THROWS_WITH(batch.rows(4, 2), Catch::Matchers::Contains("mpx::Tensor::rows: rows [4, 6)") &&
                                          Catch::Matchers::Contains("5 rows of a tensor of shape [5, 3, 2]"));
  CHECK_THROWS_AS(batch.rows(-1, 1), mpx::shape_error);
  CHECK_THROWS_AS(Tensor<float>().rows(0, 0), mpx::shape_error);
  // A view of a batch feeds a GEMM like the batch itself: rows 1..3 of x times w.
  Tensor<float> x(Shape{4, 3}), w(Shape{3, 2});
  for (std::int64_t i = 0; i < x.numel(); ++i) x[i] = 0.5f * static_cast<float>(i) - 1.0f;
  for (std::int64_t i = 0; i < w.numel(); ++i) w[i] = 0.25f * static_cast<float>(i) + 0.5f;
  const mpx::RowMajorMatrix<float> expected = x.matrix().bottomRows(3) * w.matrix();
  const mpx::RowMajorMatrix<float> product = x.rows(1, 3).matrix() * w.matrix();
  CHECK(product == expected);
}

TEST_CASE("Host peak bytes track the maximum since reset_peak", "[tensor][memory]") {
  host_stats().reset_peak();
  const std::int64_t base = host_stats().live_bytes();
  CHECK(host_stats().peak_bytes() == base);
  {
    Tensor<float> big(Shape{1000});   // 4000 bytes
    Tensor<float> small(Shape{500});  // 2000 bytes
    CHECK(host_stats().peak_bytes() == base + 6000);
    big = Tensor<float>();  // frees 4000
    CHECK(host_stats().live_bytes() == base + 2000);
    CHECK(host_stats().peak_bytes() == base + 6000);  // the peak does not fall with live bytes

    host_stats().reset_peak();  // new window starts at the current live bytes
    CHECK(host_stats().peak_bytes() == base + 2000);
    const Tensor<double> more(Shape{50});  // 400 bytes
    CHECK(host_stats().peak_bytes() == base + 2400);
  }
  CHECK(host_stats().live_bytes() == base);
  CHECK(host_stats().peak_bytes() == base + 2400);
}

TEST_CASE("allocation_count counts allocations, not moves or empty tensors", "[tensor][memory]") {
  const std::int64_t count = host_stats().allocation_count();
  const std::int64_t base = host_stats().live_bytes();

  Tensor<float> a(Shape{10});
  CHECK(host_stats().allocation_count() == count + 1);
  Tensor<float> b(std::move(a));
  Tensor<float> c;
  c = std::move(b);
  CHECK(host_stats().allocation_count() == count + 1);
  CHECK(host_stats().live_bytes() == base + 40);  // one tensor's worth after two moves

  const Tensor<float> d = c.clone();
  CHECK(host_stats().allocation_count() == count + 2);

  // Zero-size tensors own no memory.
  const Tensor<float> zero(Shape{0});
  const Tensor<double> zero_columns(Shape{3, 0});
  const Tensor<float> default_constructed;
  CHECK(zero.data() == nullptr);
  CHECK(zero_columns.data() == nullptr);
  CHECK(default_constructed.data() == nullptr);
  CHECK(zero.empty());
  CHECK(zero_columns.size_bytes() == 0);
  CHECK(host_stats().allocation_count() == count + 2);
  CHECK(host_stats().live_bytes() == base + 80);
}

TEST_CASE("Destroying moved-from tensors does not free twice", "[tensor][memory]") {
  const std::int64_t base = host_stats().live_bytes();
  {
    std::vector<Tensor<Eigen::bfloat16>> tensors;
    for (int i = 0; i < 20; ++i) tensors.emplace_back(Shape{i + 1, 3});  // growth moves the elements
    Tensor<Eigen::bfloat16> taken = std::move(tensors[4]);
    CHECK(taken.numel() == 15);
    // 2 bytes * 3 * (1 + ... + 20) = 1260 bytes
    CHECK(host_stats().live_bytes() == base + 1260);
  }
  CHECK(host_stats().live_bytes() == base);
}

// ---- convert / round_into ----------------------------------------------------------------------

namespace {

// Values every format holds exactly: at most 8 significant bits and within fp16's range
// (57344 = 1.75 * 2^15; 2^-14 is fp16's smallest normal, 2^-24 its smallest subnormal).
const std::vector<double> exact_everywhere = {0.0,  1.0,   -2.5,    0.375,   96.0,   -0.0078125,
                                              10.5, 57344, 0x1p-14, 0x1p-24, -1000.0};

template <class From, class To, class ToElement>
void check_exact_conversion() {
  Tensor<From> source(Shape{static_cast<std::int64_t>(exact_everywhere.size())});
  for (std::size_t i = 0; i < exact_everywhere.size(); ++i) {
    source[static_cast<std::int64_t>(i)] = element<From>(exact_everywhere[i]);
    REQUIRE(value_of(source[static_cast<std::int64_t>(i)]) == exact_everywhere[i]);  // test precondition
  }
  const auto result = mpx::convert<To>(source);
  STATIC_REQUIRE(std::is_same_v<typename std::decay_t<decltype(result)>::value_type, ToElement>);
  REQUIRE(result.shape() == source.shape());
  for (std::size_t i = 0; i < exact_everywhere.size(); ++i) {
    CAPTURE(exact_everywhere[i]);
    CHECK(value_of(result[static_cast<std::int64_t>(i)]) == exact_everywhere[i]);
  }
}

template <class From>
void check_exact_conversion_to_all() {
  check_exact_conversion<From, mpx::Double, double>();
  check_exact_conversion<From, mpx::Float, float>();
  check_exact_conversion<From, mpx::TF32, float>();
  check_exact_conversion<From, mpx::Half, Eigen::half>();
  check_exact_conversion<From, mpx::BFloat16, Eigen::bfloat16>();
}

struct Rounding {
  double input;
  double expected;
};

/// Converts `cases` (inputs exact in From) to `To` and compares with the expected values.
template <class From, class To>
void check_rounding(const std::vector<Rounding>& cases) {
  Tensor<From> source(Shape{static_cast<std::int64_t>(cases.size())});
  for (std::size_t i = 0; i < cases.size(); ++i) {
    source[static_cast<std::int64_t>(i)] = element<From>(cases[i].input);
    REQUIRE(value_of(source[static_cast<std::int64_t>(i)]) == cases[i].input);  // test precondition
  }
  Tensor<mpx::storage_t<To>> destination(source.shape());
  mpx::round_into<To>(source, destination);
  for (std::size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(cases[i].input, cases[i].expected);
    CHECK(value_of(destination[static_cast<std::int64_t>(i)]) == cases[i].expected);
  }
}

constexpr double inf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("convert keeps exactly representable values between every pair of element types", "[convert]") {
  SECTION("from double") {
    check_exact_conversion_to_all<double>();
  }
  SECTION("from float") {
    check_exact_conversion_to_all<float>();
  }
  SECTION("from fp16") {
    check_exact_conversion_to_all<Eigen::half>();
  }
  SECTION("from bf16") {
    check_exact_conversion_to_all<Eigen::bfloat16>();
  }
}

TEST_CASE("convert keeps infinities, NaN and the sign of zero", "[convert]") {
  const auto check = [](auto from_tag, auto to_tag) {
    using From = mpx::storage_t<decltype(from_tag)>;
    using To = decltype(to_tag);
    Tensor<From> source(Shape{4});
    source[0] = element<From>(inf);
    source[1] = element<From>(-inf);
    source[2] = element<From>(std::numeric_limits<double>::quiet_NaN());
    source[3] = element<From>(-0.0);
    const auto result = mpx::convert<To>(source);
    CAPTURE(mpx::numeric_traits<decltype(from_tag)>::name, mpx::numeric_traits<To>::name);
    CHECK(value_of(result[0]) == inf);
    CHECK(value_of(result[1]) == -inf);
    CHECK(std::isnan(value_of(result[2])));
    CHECK(value_of(result[3]) == 0.0);
    CHECK(std::signbit(value_of(result[3])));
  };
  const auto check_from = [&](auto from_tag) {
    check(from_tag, mpx::Double{});
    check(from_tag, mpx::Float{});
    check(from_tag, mpx::TF32{});
    check(from_tag, mpx::Half{});
    check(from_tag, mpx::BFloat16{});
  };
  check_from(mpx::Double{});
  check_from(mpx::Float{});
  check_from(mpx::Half{});
  check_from(mpx::BFloat16{});
}

TEST_CASE("round_into bf16 rounds to nearest, ties to even", "[convert]") {
  // bf16 keeps 7 fraction bits: spacing 2^-7 on [1, 2).
  const std::vector<Rounding> from_fp16_or_wider = {
      {0x1.014p0, 0x1.02p0},    // 1 + 2^-8 + 2^-10: past the midpoint, up
      {-0x1.014p0, -0x1.02p0},  // same magnitude, sign kept
      {0x1.01p0, 1.0},          // 1 + 2^-8: tie, 1.0 is even
      {0x1.03p0, 0x1.04p0},     // 1 + 3 * 2^-8: tie, 1 + 2^-6 is even
      {0x1.00cp0, 1.0},         // 1 + 3 * 2^-10: below the midpoint, down
  };
  check_rounding<double, mpx::BFloat16>(from_fp16_or_wider);
  check_rounding<float, mpx::BFloat16>(from_fp16_or_wider);
  check_rounding<Eigen::half, mpx::BFloat16>(from_fp16_or_wider);

  // Midway between bf16's largest finite value (odd mantissa) and 2^128: even is 2^128, i.e. inf.
  const std::vector<Rounding> overflow = {{0x1.ffp127, inf}, {0x1.fe8p127, 0x1.fep127}, {-0x1.ffp127, -inf}};
  check_rounding<double, mpx::BFloat16>(overflow);
  check_rounding<float, mpx::BFloat16>(overflow);
}

TEST_CASE("round_into fp16 rounds to nearest, ties to even, with fp16's range", "[convert]") {
  // fp16 keeps 10 fraction bits: spacing 2^-10 on [1, 2); largest finite 65504; subnormal step 2^-24.
  const std::vector<Rounding> from_fp32_or_wider = {
      {0x1.002p0, 1.0},                              // 1 + 2^-11: tie, 1.0 is even
      {0x1.006p0, 0x1.008p0},                        // 1 + 3 * 2^-11: tie, 1 + 2^-9 is even
      {0x1.003p0, 0x1.004p0},                        // 1 + 3 * 2^-12: past the midpoint, up
      {-0x1.003p0, -0x1.004p0}, {65519.0, 65504.0},  // below the midpoint to 65536
      {65520.0, inf},                                // midpoint: even is 2^16, which overflows
      {70000.0, inf},           {0x1p-26, 0.0},      // below half the smallest subnormal
      {0x1.8p-25, 0x1p-24},                          // 0.75 of the smallest subnormal rounds up to it
      {0x1p-25, 0.0},                                // half the smallest subnormal: tie, 0 is even
  };
  check_rounding<double, mpx::Half>(from_fp32_or_wider);
  check_rounding<float, mpx::Half>(from_fp32_or_wider);

  // bf16 has fewer fraction bits than fp16, so only its range can be lost.
  const std::vector<Rounding> from_bf16 = {
      {65536.0, inf}, {-81920.0, -inf}, {0x1p-26, 0.0}, {0x1.8p-25, 0x1p-24}, {0x1.fcp3, 0x1.fcp3}};
  check_rounding<Eigen::bfloat16, mpx::Half>(from_bf16);
}

TEST_CASE("round_into fp32 from double rounds to nearest, ties to even", "[convert]") {
  // fp32 keeps 23 fraction bits: spacing 2^-23 on [1, 2).
  check_rounding<double, mpx::Float>({
      {1.0 + 0x1p-24, 1.0},                      // tie, 1.0 is even
      {1.0 + 3 * 0x1p-24, 1.0 + 0x1p-22},        // tie, 1 + 2^-22 is even
      {1.0 + 0x1p-24 + 0x1p-40, 1.0 + 0x1p-23},  // past the midpoint, up
      {-(1.0 + 0x1p-24 + 0x1p-40), -(1.0 + 0x1p-23)},
      {0.1, 0x1.99999ap-4},  // 0.1 to fp32 (as a C++ 0.1f literal)
  });
}

TEST_CASE("convert<TF32> rounds ties away from zero and keeps float storage", "[convert]") {
  Tensor<float> source(Shape{2, 3});
  const float inputs[] = {1.0f + 0x1p-11f,     -(1.0f + 0x1p-11f), 1.0f + 0x1p-12f,
                          1.0f + 3 * 0x1p-11f, 0x1.7ffp0f,         1.0f + 0x1p-11f + 0x1p-23f};
  // TF32 keeps 10 fraction bits; ties go away from zero (cvt.rna), unlike fp16's ties to even.
  const double expected[] = {1.0 + 0x1p-10, -(1.0 + 0x1p-10), 1.0, 1.0 + 0x1p-9, 0x1.8p0, 1.0 + 0x1p-10};
  std::copy(std::begin(inputs), std::end(inputs), source.data());

  const auto tf32 = mpx::convert<mpx::TF32>(source);
  STATIC_REQUIRE(std::is_same_v<std::decay_t<decltype(tf32)>, Tensor<float>>);
  CHECK(tf32.shape() == Shape{2, 3});
  for (int i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(static_cast<double>(tf32[i]) == expected[i]);
  }

  // The same inputs as fp32 pass through unchanged, and as fp16 the first tie goes to even.
  const auto fp32 = mpx::convert<mpx::Float>(source);
  CHECK(fp32[0] == inputs[0]);
  const auto fp16 = mpx::convert<mpx::Half>(source);
  CHECK(value_of(fp16[0]) == 1.0);
}

TEST_CASE("convert<TF32> leaves 10 fraction bits within half a TF32 ulp", "[convert]") {
  Tensor<float> source(Shape{2000});
  for (std::int64_t i = 0; i < source.numel(); ++i) {
    source[i] = (static_cast<float>(i) - 1000.0f) * 0.0137f + 0x1p-20f;
  }
  const auto tf32 = mpx::convert<mpx::TF32>(source);
  for (std::int64_t i = 0; i < source.numel(); ++i) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &tf32[i], sizeof bits);
    CAPTURE(source[i]);
    CHECK((bits & 0x1fffu) == 0u);  // the 13 fraction bits TF32 drops are zero
    // Within half a TF32 ulp: |error| <= 2^-11 * 2^exponent <= 2^-11 * |x|.
    CHECK(std::fabs(static_cast<double>(tf32[i]) - source[i]) <= 0x1p-11 * std::fabs(source[i]));
  }
}

TEST_CASE("round_into rejects a destination of another shape, naming both shapes", "[convert]") {
  const Tensor<float> source(Shape{2, 3});
  Tensor<Eigen::half> transposed(Shape{3, 2});
  CHECK_THROWS_MATCHES(
      mpx::round_into<mpx::Half>(source, transposed), mpx::shape_error,
      MessageContains({"mpx::round_into", "destination has shape [3, 2]", "expected [2, 3]"}));

  // Same element count, other rank: still a mismatch.
  Tensor<float> flat(Shape{6});
  CHECK_THROWS_MATCHES(mpx::round_into<mpx::TF32>(source, flat), mpx::shape_error,
                       MessageContains({"[6]", "[2, 3]"}));

  // The stochastic overload checks too, and nothing is written before the check.
  Tensor<Eigen::bfloat16> longer(Shape{2, 4});
  longer.fill(element<Eigen::bfloat16>(9.0));
  CHECK_THROWS_MATCHES(mpx::round_into<mpx::BFloat16>(source, longer, mpx::RoundStochastic{1, 2}),
                       mpx::shape_error, MessageContains({"[2, 4]", "[2, 3]"}));
  CHECK(value_of(longer[0]) == 9.0);
}

TEST_CASE("convert preserves rank-3 and rank-4 shapes", "[convert]") {
  Tensor<double> source(Shape{2, 3, 4});
  source.fill(1.25);
  const auto half = mpx::convert<mpx::Half>(source);
  CHECK(half.shape() == Shape{2, 3, 4});
  CHECK(value_of(half[23]) == 1.25);
  Tensor<Eigen::bfloat16> four(Shape{1, 2, 3, 2});
  const auto wide = mpx::convert<mpx::Double>(four);
  CHECK(wide.shape() == Shape{1, 2, 3, 2});
  CHECK(wide.numel() == 12);
}

TEST_CASE("An allocation that cannot be satisfied throws out_of_memory naming the tensor and the bytes",
          "[tensor][memory]") {
  // 2^56 floats: valid as a shape, far beyond any machine's memory. (Under AddressSanitizer this
  // needs ASAN_OPTIONS=allocator_may_return_null=1, as a real out-of-memory would.)
  const mpx::Shape huge{std::int64_t{1} << 28, std::int64_t{1} << 28};
  const std::int64_t live_before = mpx::memory_stats<mpx::Host>().live_bytes();
  CHECK_THROWS_MATCHES(
      mpx::Tensor<float>::uninitialized(huge), mpx::out_of_memory,
      MessageContains({"mpx::Tensor<fp32, cpu>", "[268435456, 268435456]", "288230376151711744 bytes"}));
  CHECK(mpx::memory_stats<mpx::Host>().live_bytes() == live_before);
}

// ---- int32 tensors (labels) and moving tensors between devices ---------------------------------

TEST_CASE("Tensor<std::int32_t> holds labels: zero-filled, indexed, named int32 in messages", "[tensor]") {
  static_assert(mpx::Element<std::int32_t> && !mpx::FloatingElement<std::int32_t>);
  static_assert(mpx::element_name<std::int32_t> == "int32" && mpx::element_name<Eigen::bfloat16> == "bf16");
  Tensor<std::int32_t> labels(Shape{5});
  CHECK(labels.size_bytes() == 20);
  CHECK(all_bytes_zero(labels));
  for (std::int64_t i = 0; i < labels.numel(); ++i) labels[i] = static_cast<std::int32_t>(4 - i);
  CHECK(std::vector<std::int32_t>(labels.values().begin(), labels.values().end()) ==
        std::vector<std::int32_t>{4, 3, 2, 1, 0});
  const Tensor<std::int32_t> copy = labels.clone();
  CHECK(copy[0] == 4);
  CHECK(is_aligned_64(copy.data()));
  const mpx::Shape huge{std::int64_t{1} << 28, std::int64_t{1} << 28};
  CHECK_THROWS_MATCHES(Tensor<std::int32_t>::uninitialized(huge), mpx::out_of_memory,
                       MessageContains({"mpx::Tensor<int32, cpu>"}));
}

TEST_CASE("to<Host> of a host tensor is that tensor; a temporary is moved, not copied",
          "[tensor][transfer]") {
  Tensor<float> x(Shape{2, 3});
  x.fill(1.5f);
  const std::int64_t allocations = mpx::memory_stats<mpx::Host>().allocation_count();
  const Tensor<float>& same = mpx::to<mpx::Host>(x);
  CHECK(&same == &x);
  Tensor<float> scratch;
  const Tensor<float>& through_buffer = mpx::to<mpx::Host>(x, scratch);
  CHECK(&through_buffer == &x);
  CHECK(scratch.empty());  // the buffer is for another device's copy; untouched here
  const float* data = x.data();
  const Tensor<float> moved = mpx::to<mpx::Host>(std::move(x));
  CHECK(moved.data() == data);
  CHECK(mpx::memory_stats<mpx::Host>().allocation_count() == allocations);
}

TEST_CASE("copy copies between tensors of one shape and rejects another, naming both", "[tensor][transfer]") {
  Tensor<std::int32_t> source(Shape{4});
  for (std::int64_t i = 0; i < 4; ++i) source[i] = static_cast<std::int32_t>(10 * i);
  Tensor<std::int32_t> destination(Shape{4});
  mpx::copy(destination, source);
  CHECK(std::equal(source.values().begin(), source.values().end(), destination.values().begin()));
  CHECK(destination.data() != source.data());
  Tensor<std::int32_t> wrong(Shape{5});
  CHECK_THROWS_MATCHES(mpx::copy(wrong, source), mpx::shape_error,
                       MessageContains({"mpx::copy", "[5]", "[4]"}));
  Tensor<std::int32_t> empty_source;
  Tensor<std::int32_t> empty_destination;
  mpx::copy(empty_destination, empty_source);  // nothing to copy, nothing to check
}

}  // namespace MPX_UNITY_ID
}  // namespace
