#include "scalars/degree.h"

#include <algorithm>

namespace permcheck {

namespace {
thread_local std::uint64_t next_id = 0;
thread_local DivisorRecord* current_record = nullptr;

long long checked_add(long long a, long long b) {
    long long r;
    if (__builtin_add_overflow(a, b, &r))
        throw std::overflow_error("degree bound exceeds 2^63: the layer is too deep for a degree certificate");
    return r;
}
long long checked_mul(long long a, long long b) {
    long long r;
    if (__builtin_mul_overflow(a, b, &r))
        throw std::overflow_error("degree bound exceeds 2^63: the layer is too deep for a degree certificate");
    return r;
}

long long degree_of(const std::vector<Degree::Factor>& factors) {
    long long d = 0;
    for (const Degree::Factor& f : factors) d = checked_add(d, checked_mul(f.degree, f.power));
    return d;
}

// The divisors, each once.
std::vector<std::pair<std::uint64_t, long long>> distinct(std::vector<std::pair<std::uint64_t, long long>> d) {
    std::sort(d.begin(), d.end());
    d.erase(std::unique(d.begin(), d.end()), d.end());
    return d;
}

// Merges two sorted factor lists, combining the powers of a shared factor with `combine`.
template <class Combine>
std::vector<Degree::Factor> merge(const std::vector<Degree::Factor>& a, const std::vector<Degree::Factor>& b,
                                  Combine combine) {
    std::vector<Degree::Factor> out;
    out.reserve(a.size() + b.size());
    std::size_t i = 0, j = 0;
    while (i < a.size() || j < b.size()) {
        if (j == b.size() || (i < a.size() && a[i].id < b[j].id)) out.push_back(a[i++]);
        else if (i == a.size() || b[j].id < a[i].id) out.push_back(b[j++]);
        else {
            out.push_back({a[i].id, a[i].degree, combine(a[i].power, b[j].power)});
            ++i;
            ++j;
        }
    }
    return out;
}
}  // namespace

std::uint64_t Degree::fresh_id() { return ++next_id; }

Degree Degree::constant(const Rational& v) {
    Degree c;
    c.value_ = v;
    return c;
}

Degree Degree::polynomial(long long num, std::vector<Factor> den) {
    Degree r;
    r.value_.reset();
    r.num_ = num;
    r.den_ = std::move(den);
    r.id_ = fresh_id();
    return r;
}

Degree Degree::variable() { return polynomial(1, {}); }

const Rational& Degree::value() const {
    if (!value_) throw NotRational("a value that depends on the layer's variables has no numeric value");
    return *value_;
}

long long Degree::denominator_degree() const { return degree_of(den_); }

Degree Degree::with_fresh_id() const {
    Degree r = *this;
    r.id_ = fresh_id();
    return r;
}

Degree Degree::operator-() const {
    if (value_) return constant(-*value_);
    return with_fresh_id();  // -p / q: the same degrees
}

Degree operator+(const Degree& a, const Degree& b) {
    if (a.value_ && b.value_) return Degree::constant(*a.value_ + *b.value_);
    if (a.is_zero()) return b.with_fresh_id();
    if (b.is_zero()) return a.with_fresh_id();
    // p_a / q_a + p_b / q_b = (p_a (L / q_a) + p_b (L / q_b)) / L, L the least common multiple of the factor lists.
    std::vector<Degree::Factor> den = merge(a.den_, b.den_, [](long long x, long long y) { return std::max(x, y); });
    const long long lcm = degree_of(den);
    const long long num =
        std::max(checked_add(a.num_, lcm - degree_of(a.den_)), checked_add(b.num_, lcm - degree_of(b.den_)));
    return Degree::polynomial(num, std::move(den));
}

Degree operator*(const Degree& a, const Degree& b) {
    if (a.value_ && b.value_) return Degree::constant(*a.value_ * *b.value_);
    if (a.is_zero() || b.is_zero()) return Degree(0);
    return Degree::polynomial(checked_add(a.num_, b.num_),
                              merge(a.den_, b.den_, [](long long x, long long y) { return checked_add(x, y); }));
}

Degree operator/(const Degree& a, const Degree& b) {
    if (b.is_zero()) throw std::domain_error("division by the constant zero");
    if (b.value_) {
        if (a.value_) return Degree::constant(*a.value_ / *b.value_);
        return a.with_fresh_id();  // a nonzero constant divisor changes no degree and cannot vanish
    }
    if (current_record) current_record->add(b.id_, b.num_);
    if (a.is_zero()) return Degree(0);
    // (p_a / q_a) / (p_b / q_b) = (p_a q_b) / (q_a p_b).
    return Degree::polynomial(checked_add(a.num_, degree_of(b.den_)),
                              merge(a.den_, std::vector<Degree::Factor>{{b.id_, b.num_, 1}},
                                    [](long long x, long long y) { return checked_add(x, y); }));
}

bool operator==(const Degree& a, const Degree& b) {
    if (a.value_ && b.value_) return *a.value_ == *b.value_;
    return !a.value_ && !b.value_ && a.id_ == b.id_;
}

bool operator<(const Degree& a, const Degree& b) {
    if (a.value_ && b.value_) return *a.value_ < *b.value_;
    throw NotRational("the layer compares values that depend on its inputs or weights (max or a branch): it is "
                      "piecewise, not a rational function");
}

DivisorRecord::DivisorRecord() : previous_(current_record) { current_record = this; }
DivisorRecord::~DivisorRecord() { current_record = previous_; }

void DivisorRecord::add(std::uint64_t id, long long degree) { divisors_.emplace_back(id, degree); }

std::size_t DivisorRecord::count() const { return distinct(divisors_).size(); }

long long DivisorRecord::total_degree() const {
    long long total = 0;
    for (const auto& [id, degree] : distinct(divisors_)) total = checked_add(total, degree);
    return total;
}

}  // namespace permcheck
