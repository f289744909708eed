#pragma once
// Strong unit types: Time, Bytes, Bandwidth.
//
// Model
//   Time      signed 64-bit count of picoseconds (range ±106 days).
//   Bytes     signed 64-bit count of bytes (negative only as a difference).
//   Bandwidth signed 64-bit count of bits per second (1 bps resolution; the
//             fastest link we model, 7.2 Tb/s, is 7.2e12 bps).
//
// Only meaningful arithmetic compiles: Time ± Time, Time × integer,
// Bytes ± Bytes, Bytes × integer, Bandwidth ± Bandwidth, Bandwidth × integer
// (link counts), Bandwidth.scaled(efficiency), Bytes / Bandwidth → Time,
// Bandwidth × Time → Bytes, and ratios of like quantities → double.
//
// Transfer time is computed exactly once per transfer:
//   t[ps] = ceil(bytes × 8 × 10^12 / bits_per_second)
// in 128-bit integer arithmetic, so a 2 GiB transfer is exact to the
// picosecond at 25 GB/s as at 7.2 Tb/s (a pre-truncated ps-per-byte would be
// 0.32 ps/B at 25 GB/s: 20 % off once rounded to an integer).

#include <cmath>
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

namespace meshsim {

class Time {
 public:
  constexpr Time() = default;
  static constexpr Time ps(std::int64_t v) { return Time(v); }
  static constexpr Time ns(std::int64_t v) { return Time(v * 1'000); }
  static constexpr Time us(std::int64_t v) { return Time(v * 1'000'000); }
  static constexpr Time ms(std::int64_t v) { return Time(v * 1'000'000'000); }
  static constexpr Time s(std::int64_t v) { return Time(v * 1'000'000'000'000); }
  static constexpr Time zero() { return Time(0); }
  /// Rounded to the nearest picosecond.
  static Time from_seconds(double s) { return Time(static_cast<std::int64_t>(std::llround(s * 1e12))); }
  static constexpr Time max() { return Time(INT64_MAX); }

  [[nodiscard]] constexpr std::int64_t count_ps() const { return ps_; }
  [[nodiscard]] constexpr double seconds() const { return static_cast<double>(ps_) * 1e-12; }
  [[nodiscard]] constexpr double microseconds() const { return static_cast<double>(ps_) * 1e-6; }

  constexpr Time& operator+=(Time o) {
    ps_ += o.ps_;
    return *this;
  }
  constexpr Time& operator-=(Time o) {
    ps_ -= o.ps_;
    return *this;
  }
  friend constexpr Time operator+(Time a, Time b) { return Time(a.ps_ + b.ps_); }
  friend constexpr Time operator-(Time a, Time b) { return Time(a.ps_ - b.ps_); }
  friend constexpr Time operator-(Time a) { return Time(-a.ps_); }
  friend constexpr Time operator*(Time a, std::int64_t k) { return Time(a.ps_ * k); }
  friend constexpr Time operator*(std::int64_t k, Time a) { return Time(a.ps_ * k); }
  /// Division by an integer truncates toward zero.
  friend constexpr Time operator/(Time a, std::int64_t k) { return Time(a.ps_ / k); }
  friend constexpr double operator/(Time a, Time b) {
    return static_cast<double>(a.ps_) / static_cast<double>(b.ps_);
  }
  friend constexpr auto operator<=>(Time, Time) = default;

 private:
  constexpr explicit Time(std::int64_t ps) : ps_(ps) {}
  std::int64_t ps_ = 0;
};

class Bytes {
 public:
  constexpr Bytes() = default;
  constexpr explicit Bytes(std::int64_t n) : n_(n) {}
  static constexpr Bytes KiB(std::int64_t v) { return Bytes(v << 10); }
  static constexpr Bytes MiB(std::int64_t v) { return Bytes(v << 20); }
  static constexpr Bytes GiB(std::int64_t v) { return Bytes(v << 30); }

  [[nodiscard]] constexpr std::int64_t count() const { return n_; }

  constexpr Bytes& operator+=(Bytes o) {
    n_ += o.n_;
    return *this;
  }
  constexpr Bytes& operator-=(Bytes o) {
    n_ -= o.n_;
    return *this;
  }
  friend constexpr Bytes operator+(Bytes a, Bytes b) { return Bytes(a.n_ + b.n_); }
  friend constexpr Bytes operator-(Bytes a, Bytes b) { return Bytes(a.n_ - b.n_); }
  friend constexpr Bytes operator*(Bytes a, std::int64_t k) { return Bytes(a.n_ * k); }
  friend constexpr Bytes operator*(std::int64_t k, Bytes a) { return Bytes(a.n_ * k); }
  /// Division by an integer truncates toward zero.
  friend constexpr Bytes operator/(Bytes a, std::int64_t k) { return Bytes(a.n_ / k); }
  friend constexpr double operator/(Bytes a, Bytes b) {
    return static_cast<double>(a.n_) / static_cast<double>(b.n_);
  }
  friend constexpr auto operator<=>(Bytes, Bytes) = default;

 private:
  std::int64_t n_ = 0;
};

class Bandwidth {
 public:
  constexpr Bandwidth() = default;
  static constexpr Bandwidth bits_per_second(std::int64_t v) { return Bandwidth(v); }
  static constexpr Bandwidth bytes_per_second(std::int64_t v) { return Bandwidth(v * 8); }
  static constexpr Bandwidth Gbps(std::int64_t v) { return Bandwidth(v * 1'000'000'000); }
  static constexpr Bandwidth GBps(std::int64_t v) { return Bandwidth(v * 8'000'000'000); }

  [[nodiscard]] constexpr std::int64_t bps() const { return bps_; }
  [[nodiscard]] constexpr double bytes_per_second_f() const { return static_cast<double>(bps_) / 8.0; }
  /// GB/s with GB = 10^9 bytes, the unit of nccl-tests and of our tables.
  [[nodiscard]] constexpr double GBps_f() const { return static_cast<double>(bps_) / 8e9; }
  [[nodiscard]] constexpr bool is_zero() const { return bps_ == 0; }

  /// This bandwidth times a factor (an efficiency in (0, 1], an
  /// oversubscription share), rounded to the nearest bit per second.
  [[nodiscard]] Bandwidth scaled(double factor) const;

  constexpr Bandwidth& operator+=(Bandwidth o) {
    bps_ += o.bps_;
    return *this;
  }
  friend constexpr Bandwidth operator+(Bandwidth a, Bandwidth b) { return Bandwidth(a.bps_ + b.bps_); }
  friend constexpr Bandwidth operator-(Bandwidth a, Bandwidth b) { return Bandwidth(a.bps_ - b.bps_); }
  friend constexpr Bandwidth operator*(Bandwidth a, std::int64_t k) { return Bandwidth(a.bps_ * k); }
  friend constexpr Bandwidth operator*(std::int64_t k, Bandwidth a) { return Bandwidth(a.bps_ * k); }
  friend constexpr double operator/(Bandwidth a, Bandwidth b) {
    return static_cast<double>(a.bps_) / static_cast<double>(b.bps_);
  }
  friend constexpr auto operator<=>(Bandwidth, Bandwidth) = default;

 private:
  constexpr explicit Bandwidth(std::int64_t bps) : bps_(bps) {}
  std::int64_t bps_ = 0;
};

/// Exact time to move `size` at `rate`, rounded up to the next picosecond.
/// Requires rate > 0 and size >= 0 (InternalError otherwise); throws
/// InternalError if the result exceeds the Time range.
[[nodiscard]] Time transfer_time(Bytes size, Bandwidth rate);
[[nodiscard]] inline Time operator/(Bytes size, Bandwidth rate) {
  return transfer_time(size, rate);
}

/// Bytes moved in `t` at `rate`, rounded down to a whole byte.
[[nodiscard]] Bytes bytes_in(Time t, Bandwidth rate);
[[nodiscard]] inline Bytes operator*(Bandwidth rate, Time t) {
  return bytes_in(t, rate);
}
[[nodiscard]] inline Bytes operator*(Time t, Bandwidth rate) {
  return bytes_in(t, rate);
}

/// A size computed in doubles (from model shapes and batch sizes) as whole
/// bytes, rounded toward zero. UsageError naming `what` when it is NaN,
/// negative, or past the 2^63 - 1 bytes a Bytes holds.
[[nodiscard]] Bytes checked_bytes(double bytes, std::string_view what);

}  // namespace meshsim
