// kiln::stable_sort: std::stable_sort without libstdc++ 12's temporary
// buffer. That buffer comes from std::get_temporary_buffer, deprecated in
// C++20, and clang reports the deprecation at every std::stable_sort call
// (-Wdeprecated-declarations), which fails a clang build with warnings as
// errors. Sorts positions with std::sort, ties broken by position, then moves
// the elements into place: the same order std::stable_sort gives.
#pragma once

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <utility>
#include <vector>

namespace kiln {

template <class T, class Less>
void stable_sort(std::vector<T>& values, Less less) {
  std::vector<size_t> pos(values.size());
  std::iota(pos.begin(), pos.end(), size_t{0});
  std::sort(pos.begin(), pos.end(), [&](size_t a, size_t b) {
    if (less(values[a], values[b])) return true;
    if (less(values[b], values[a])) return false;
    return a < b;
  });
  std::vector<T> sorted;
  sorted.reserve(values.size());
  for (size_t p : pos) sorted.push_back(std::move(values[p]));
  values = std::move(sorted);
}

}  // namespace kiln
