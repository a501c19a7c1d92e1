// A tensor's dims: a vector of int64_t with room for kInlineDims in the object itself, so making,
// copying and freeing the shape of an ordinary tensor allocates nothing (an op used to spend half
// of its mallocs on shape copies). It has the std::vector members the code uses and converts to and
// from std::vector<int64_t>; more than kInlineDims dims move to the heap.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <utility>
#include <vector>

namespace flock {

class Shape {
 public:
  using value_type = int64_t;
  using size_type = size_t;
  using iterator = int64_t*;
  using const_iterator = const int64_t*;
  static constexpr size_t kInlineDims = 8;

  Shape() = default;
  explicit Shape(size_t n, int64_t v = 0) { assign(n, v); }
  Shape(std::initializer_list<int64_t> dims) { assign(dims.begin(), dims.end()); }
  template <class It, class = decltype(*std::declval<It&>(), ++std::declval<It&>())>
  Shape(It first, It last) {
    assign(first, last);
  }
  Shape(const std::vector<int64_t>& v) { assign(v.begin(), v.end()); }  // NOLINT: implicit, as the type it replaces
  Shape(const Shape& o) { assign(o.begin(), o.end()); }
  Shape(Shape&& o) noexcept { take(o); }
  Shape& operator=(const Shape& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  Shape& operator=(Shape&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  Shape& operator=(std::initializer_list<int64_t> dims) {
    assign(dims.begin(), dims.end());
    return *this;
  }
  ~Shape() { release(); }

  operator std::vector<int64_t>() const { return std::vector<int64_t>(begin(), end()); }  // NOLINT: implicit

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return ptr(); }
  const int64_t* data() const { return ptr(); }
  int64_t& operator[](size_t i) { return ptr()[i]; }
  const int64_t& operator[](size_t i) const { return ptr()[i]; }
  int64_t* begin() { return ptr(); }
  int64_t* end() { return ptr() + size_; }
  const int64_t* begin() const { return ptr(); }
  const int64_t* end() const { return ptr() + size_; }
  const int64_t* cbegin() const { return begin(); }
  const int64_t* cend() const { return end(); }
  std::reverse_iterator<int64_t*> rbegin() { return std::reverse_iterator<int64_t*>(end()); }
  std::reverse_iterator<int64_t*> rend() { return std::reverse_iterator<int64_t*>(begin()); }
  std::reverse_iterator<const int64_t*> rbegin() const { return std::reverse_iterator<const int64_t*>(end()); }
  std::reverse_iterator<const int64_t*> rend() const { return std::reverse_iterator<const int64_t*>(begin()); }
  int64_t& front() { return ptr()[0]; }
  int64_t& back() { return ptr()[size_ - 1]; }
  const int64_t& front() const { return ptr()[0]; }
  const int64_t& back() const { return ptr()[size_ - 1]; }

  void reserve(size_t n) {
    if (n <= capacity()) return;
    auto* p = static_cast<int64_t*>(std::malloc(n * sizeof(int64_t)));
    if (!p) throw std::bad_alloc();
    if (size_) std::memcpy(p, ptr(), size_ * sizeof(int64_t));
    release();
    heap_ = p;
    cap_ = n;
  }
  void clear() { size_ = 0; }
  void resize(size_t n, int64_t v = 0) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) ptr()[i] = v;
    size_ = n;
  }
  void assign(size_t n, int64_t v) {
    clear();
    resize(n, v);
  }
  template <class It>
  void assign(It first, It last) {
    clear();
    reserve(static_cast<size_t>(std::distance(first, last)));
    for (; first != last; ++first) ptr()[size_++] = static_cast<int64_t>(*first);
  }
  void push_back(int64_t v) {
    if (size_ == capacity()) reserve(capacity() * 2);
    ptr()[size_++] = v;
  }
  void emplace_back(int64_t v) { push_back(v); }
  void pop_back() { --size_; }
  int64_t* insert(const int64_t* pos, int64_t v) { return insert(pos, size_t(1), v); }
  int64_t* insert(const int64_t* pos, size_t n, int64_t v) {
    const size_t at = static_cast<size_t>(pos - begin());
    reserve(size_ + n);
    std::memmove(ptr() + at + n, ptr() + at, (size_ - at) * sizeof(int64_t));
    for (size_t i = 0; i < n; ++i) ptr()[at + i] = v;
    size_ += n;
    return ptr() + at;
  }
  template <class It, class = decltype(*std::declval<It&>(), ++std::declval<It&>())>
  int64_t* insert(const int64_t* pos, It first, It last) {
    const size_t at = static_cast<size_t>(pos - begin());
    const Shape added(first, last);  // a copy: the range may lie in this shape
    reserve(size_ + added.size());
    std::memmove(ptr() + at + added.size(), ptr() + at, (size_ - at) * sizeof(int64_t));
    std::copy(added.begin(), added.end(), ptr() + at);
    size_ += added.size();
    return ptr() + at;
  }
  int64_t* erase(const int64_t* pos) { return erase(pos, pos + 1); }
  int64_t* erase(const int64_t* first, const int64_t* last) {
    const size_t at = static_cast<size_t>(first - begin()), n = static_cast<size_t>(last - first);
    std::memmove(ptr() + at, ptr() + at + n, (size_ - at - n) * sizeof(int64_t));
    size_ -= n;
    return ptr() + at;
  }

  friend bool operator==(const Shape& a, const Shape& b) {
    return a.size_ == b.size_ && (a.size_ == 0 || std::memcmp(a.ptr(), b.ptr(), a.size_ * sizeof(int64_t)) == 0);
  }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  size_t capacity() const { return heap_ ? cap_ : kInlineDims; }
  int64_t* ptr() { return heap_ ? heap_ : inline_; }
  const int64_t* ptr() const { return heap_ ? heap_ : inline_; }
  void release() {
    std::free(heap_);
    heap_ = nullptr;
    cap_ = 0;
  }
  void take(Shape& o) {
    size_ = o.size_;
    if (o.heap_) {
      heap_ = o.heap_;
      cap_ = o.cap_;
      o.heap_ = nullptr;
      o.cap_ = 0;
    } else if (size_) {
      std::memcpy(inline_, o.inline_, size_ * sizeof(int64_t));
    }
    o.size_ = 0;
  }

  int64_t* heap_ = nullptr;
  size_t size_ = 0;
  size_t cap_ = 0;
  int64_t inline_[kInlineDims];
};

}  // namespace flock
