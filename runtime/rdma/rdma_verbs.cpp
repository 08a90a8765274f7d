#include "runtime/rdma/rdma_verbs.hpp"

#include <cerrno>
#include <cstring>

#include "runtime/rdma/rdma_selection.hpp"

namespace spillway {
namespace {

[[noreturn]] void fail(const std::string& what, int error) {
  const char* name = strerrorname_np(error);
  throw rdma_setup_error(what + ": " + (name ? name : std::to_string(error)));
}

}  // namespace

template <class Handle>
Handle verbs_created(typename Handle::pointer object, const std::string& what) {
  if (object == nullptr) fail(what, errno);
  return Handle{object};
}

template rdma_context verbs_created<rdma_context>(ibv_context*, const std::string&);
template rdma_pd verbs_created<rdma_pd>(ibv_pd*, const std::string&);
template rdma_mr verbs_created<rdma_mr>(ibv_mr*, const std::string&);
template rdma_channel verbs_created<rdma_channel>(ibv_comp_channel*, const std::string&);
template rdma_cq verbs_created<rdma_cq>(ibv_cq*, const std::string&);
template rdma_qp verbs_created<rdma_qp>(ibv_qp*, const std::string&);

void verbs_check(int result, const std::string& what) {
  if (result != 0) fail(what, result);
}

}  // namespace spillway
