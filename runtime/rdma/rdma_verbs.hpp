// Owning handles for the verbs objects spillway creates: each frees its object with
// the matching ibv_ call, so partial setup unwinds in reverse order of creation and
// no error path leaks a PD, MR, CQ, QP, channel or device context. A queue pair is
// destroyed before its CQs and channel, and MRs before their PD, as long as the
// owners declare them in creation order (C++ destroys members in reverse).
#pragma once

#include <infiniband/verbs.h>

#include <memory>
#include <string>

namespace spillway {

template <auto Destroy>
struct verbs_deleter {
  template <class T>
  void operator()(T* object) const { Destroy(object); }
};

using rdma_context = std::unique_ptr<ibv_context, verbs_deleter<&ibv_close_device>>;
using rdma_pd = std::unique_ptr<ibv_pd, verbs_deleter<&ibv_dealloc_pd>>;
using rdma_mr = std::unique_ptr<ibv_mr, verbs_deleter<&ibv_dereg_mr>>;
using rdma_channel =
  std::unique_ptr<ibv_comp_channel, verbs_deleter<&ibv_destroy_comp_channel>>;
using rdma_cq = std::unique_ptr<ibv_cq, verbs_deleter<&ibv_destroy_cq>>;
using rdma_qp = std::unique_ptr<ibv_qp, verbs_deleter<&ibv_destroy_qp>>;

// Takes ownership of what a creating ibv_ call returned; throws rdma_setup_error
// ("<what>: <errno name>") when it returned NULL.
template <class Handle>
Handle verbs_created(typename Handle::pointer object, const std::string& what);

// Throws rdma_setup_error ("<what>: <errno name>") when a verbs call answered `result`
// != 0; those calls return an errno rather than setting it.
void verbs_check(int result, const std::string& what);

}  // namespace spillway
