// "Binary-compatible" between a type gpumem declares by hand (gpumem::abi) and NVIDIA's own
// declaration of it: the same type once each of gpumem's structs and opaque handles is replaced by
// NVIDIA's counterpart (whose layout the conformance tests check field by field), where an
// int-sized integer stands for one of NVIDIA's C enums (CUresult, nvmlReturn_t, attributes), which
// the platform ABIs gpumem supports pass and store as 4-byte integers.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

namespace gpumem::abi_test {

// NVIDIA's type for one of gpumem's; specialised by each test for the structs it declares.
template <class Ours>
struct counterpart {
  using type = Ours;
};

template <class Ours>
struct mapped {
  using type = typename counterpart<Ours>::type;
};
template <class T>
struct mapped<T*> {
  using type = typename mapped<T>::type*;
};
template <class T>
struct mapped<const T> {
  using type = const typename mapped<T>::type;
};
template <class R, class... Args>
struct mapped<R (*)(Args...)> {
  using type = typename mapped<R>::type (*)(typename mapped<Args>::type...);
};

template <class A, class B>
struct compatible : std::is_same<A, B> {};

// An enum on one side, an integer of the same size and signedness-agnostic width on the other.
template <class A, class B>
inline constexpr bool enum_as_int = (std::is_enum_v<A> && std::is_integral_v<B> &&
                                     sizeof(A) == sizeof(B) && sizeof(B) == 4) ||
                                    (std::is_enum_v<B> && std::is_integral_v<A> &&
                                     sizeof(A) == sizeof(B) && sizeof(A) == 4);

template <class A, class B>
requires(!std::is_same_v<A, B> && enum_as_int<A, B>) struct compatible<A, B> : std::true_type {
};
template <class A, class B>
struct compatible<A*, B*> : compatible<A, B> {};
template <class A, class B>
struct compatible<const A, const B> : compatible<A, B> {};
template <class RA, class... A, class RB, class... B>
requires(sizeof...(A) == sizeof...(B)) struct compatible<RA (*)(A...), RB (*)(B...)>
    : std::bool_constant<compatible<RA, RB>::value && (compatible<A, B>::value && ...)> {
};

// Ours (after mapping) can stand where NVIDIA declares Theirs.
template <class Ours, class Theirs>
inline constexpr bool abi_compatible = compatible<typename mapped<Ours>::type, Theirs>::value;

// Replaces parameter I of a function-pointer type by void*: for gpumem's untyped buffers (a
// process list whose entry stride is probed at run time).
template <std::size_t I, class F>
struct untyped_parameter;
template <std::size_t I, class R, class... Args>
struct untyped_parameter<I, R (*)(Args...)> {
  template <std::size_t... N>
  static auto make(std::index_sequence<N...>) -> R (*)(std::conditional_t<N == I, void*, Args>...);
  using type = decltype(make(std::index_sequence_for<Args...>{}));
};

}  // namespace gpumem::abi_test
