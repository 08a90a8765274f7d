// Completions are waited for on the CQ's completion channel fd, not by busy-polling:
// a node runs io_uring readers, CAF's scheduler and one thread per QP on few cores,
// and a spinning QP thread would take a core from them for as long as it lives. The
// cost is an interrupt and a wakeup, paid once per reap rather than per slice: the
// CQ is drained before the channel is armed, and a group keeps up to `depth` slices
// in flight. poll() on the fd also gives transfer.slice_timeout_ms for free, as for
// a tcp lane.
#include "runtime/rdma/rdma_queue_pair.hpp"

#include <poll.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include <spdlog/spdlog.h>

#include "runtime/rdma/rdma_completion.hpp"
#include "runtime/rdma/rdma_qp_attr.hpp"
#include "runtime/rdma/rdma_work_request.hpp"

namespace spillway {
namespace {

constexpr std::size_t post_batch = 32;  // work requests chained into one ibv_post_send
constexpr int reap_batch = 32;          // completions taken by one ibv_poll_cq

std::uint32_t first_psn() {
  static thread_local std::minstd_rand random{std::random_device{}()};
  return static_cast<std::uint32_t>(random()) & 0xffffff;
}

// The HCA may still DMA into memory of a work request it has not completed, so a
// group cannot be handed back while one is out; a CQ that never flushes them is a
// broken driver, and only stopping the process keeps the caller's memory safe.
[[noreturn]] void abort_unflushed(const char* why) {
  std::fprintf(stderr, "spillway: rdma queue pair: %s; aborting\n", why);
  std::abort();
}

}  // namespace

struct rdma_queue_pair::exchange {
  std::vector<slice*>& items;
  std::size_t next = 0;           // the first slice not posted yet
  std::size_t in_flight = 0;      // posted, not completed
  transfer_status stopped_for{};  // none until we move the QP to the error state: why
};

rdma_queue_pair::rdma_queue_pair(std::shared_ptr<const rdma_domain> domain, std::size_t device,
                                 std::uint32_t depth)
    : domain_(std::move(domain)), device_(device), psn_(first_psn()) {
  const auto& d = domain_->device(device_);
  depth_ = std::max<std::uint32_t>(1, std::min(depth, d.max_wr));
  auto* context = d.context.get();
  channel_ = verbs_created<rdma_channel>(ibv_create_comp_channel(context),
                                         d.name + ": ibv_create_comp_channel");
  cq_ = verbs_created<rdma_cq>(
    ibv_create_cq(context, static_cast<int>(depth_), nullptr, channel_.get(), 0),
    d.name + ": ibv_create_cq");
  ibv_qp_init_attr init{};
  init.send_cq = cq_.get();
  init.recv_cq = cq_.get();
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = depth_;
  init.cap.max_recv_wr = 1;  // nothing is ever received; some providers refuse 0
  init.cap.max_send_sge = 1;
  init.cap.max_recv_sge = 1;
  qp_ = verbs_created<rdma_qp>(ibv_create_qp(d.pd.get(), &init), d.name + ": ibv_create_qp");
  auto t = init_transition(d.settings);
  verbs_check(ibv_modify_qp(qp_.get(), &t.attr, t.mask), d.name + ": QP to INIT");
}

bool rdma_queue_pair::knows_segments_of(const slice_group& group) const {
  return knows_every_segment(remote_.segments, group);
}

rdma_qp_info rdma_queue_pair::local_info() const {
  const auto& d = domain_->device(device_);
  rdma_qp_info info;
  info.qp_num = qp_->qp_num;
  info.psn = psn_;
  info.lid = d.lid;
  info.port = d.settings.port;
  gid_to_halves(d.gid, info.gid_high, info.gid_low);
  return info;
}

void rdma_queue_pair::connect(rdma_qp_info remote) {
  const auto& d = domain_->device(device_);
  auto rtr = rtr_transition(d.settings, remote);
  verbs_check(ibv_modify_qp(qp_.get(), &rtr.attr, rtr.mask), d.name + ": QP to RTR");
  auto rts = rts_transition(d.settings, psn_);
  verbs_check(ibv_modify_qp(qp_.get(), &rts.attr, rts.mask), d.name + ": QP to RTS");
  remote_ = std::move(remote);
}

// Posts the next slices, up to `depth` in flight, as one chain. A slice that cannot
// become a work request (no rkey for its segment, no lkey for its memory) is settled
// here; one the QP refuses to take fails as lane_closed with the errno, and so does
// every slice after an error, which the QP will not run any more.
void rdma_queue_pair::post(exchange& x) {
  std::array<ibv_send_wr, post_batch> wrs;
  std::array<ibv_sge, post_batch> sges;
  std::size_t count = 0;
  for (; x.next < x.items.size() && count < post_batch && x.in_flight + count < depth_;
       ++x.next) {
    slice& s = *x.items[x.next];
    if (broken_) {
      s.status = {transfer_error::lane_closed, 0};
      continue;
    }
    const auto* remote = find_segment(remote_.segments, s.segment);
    if (remote == nullptr) {
      s.status = {transfer_error::unknown_segment, 0};
      continue;
    }
    const auto lkey = domain_->local_key(device_, s.local, s.length);
    if (!lkey) {
      s.status = {transfer_error::local_access, 0};
      continue;
    }
    build_work_request(s, *lkey, *remote, x.next, wrs[count], sges[count]);
    if (count > 0) wrs[count - 1].next = &wrs[count];
    ++count;
  }
  if (count == 0) return;
  ibv_send_wr* refused = nullptr;
  const int error = ibv_post_send(qp_.get(), wrs.data(), &refused);
  // On failure the provider names the first request it refused; without one, none is
  // counted as posted, or run() would wait for completions that never come.
  const auto taken = error == 0 ? count : refused == nullptr ? 0 : refused - wrs.data();
  x.in_flight += static_cast<std::size_t>(taken);
  if (error == 0) return;
  broken_ = true;
  for (auto i = static_cast<std::size_t>(taken); i < count; ++i)
    x.items[wrs[i].wr_id]->status = {transfer_error::lane_closed, error};
}

// Takes what completed. The first error puts the QP in the error state for good.
std::size_t rdma_queue_pair::reap(exchange& x) {
  std::array<ibv_wc, reap_batch> wcs;
  const int n = ibv_poll_cq(cq_.get(), reap_batch, wcs.data());
  if (n < 0) abort_unflushed("ibv_poll_cq failed with work requests out");
  for (int i = 0; i < n; ++i) {
    const ibv_wc& wc = wcs[i];
    slice& s = *x.items[wc.wr_id];
    if (wc.status == IBV_WC_SUCCESS) {
      s.status = {};
      continue;
    }
    if (!broken_)
      spdlog::warn("rdma {} QP {}: {}; the next group connects a fresh QP",
                   domain_->device(device_).name, qp_->qp_num, ibv_wc_status_str(wc.status));
    broken_ = true;
    s.status = completion_status(wc.status, x.stopped_for);
  }
  x.in_flight -= static_cast<std::size_t>(n);
  return static_cast<std::size_t>(n);
}

// Blocks until the CQ signals its channel; false after `timeout` without a signal. The
// first call only arms the CQ and returns: a completion that came between the last
// poll and the arming signals nothing, so the caller polls once more before sleeping.
// A CQ that cannot be armed would never signal, which is no timeout: the QP is stopped
// and its slices fail with the errno. The flushes that follow are waited for on a CQ
// armed again; if that fails too, nothing can tell us the HCA is done with them.
bool rdma_queue_pair::wait(exchange& x, std::chrono::milliseconds timeout) {
  if (!armed_) {
    const int error = ibv_req_notify_cq(cq_.get(), 0);
    if (error == 0) {
      armed_ = true;
      return true;
    }
    if (!x.stopped_for.ok()) abort_unflushed("cannot arm the CQ to wait for the flushes");
    const auto why = notify_failure_status(error);
    spdlog::warn("rdma {} QP {}: ibv_req_notify_cq failed: {}; the next group connects a "
                 "fresh QP", domain_->device(device_).name, qp_->qp_num, to_string(why));
    stop(x, why);
    return true;  // the flushes may be in the CQ already
  }
  pollfd p{channel_->fd, POLLIN, 0};
  int ready = 0;
  do {
    ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
  } while (ready < 0 && errno == EINTR);
  if (ready <= 0) return false;
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  if (ibv_get_cq_event(channel_.get(), &cq, &context) == 0) ibv_ack_cq_events(cq, 1);
  armed_ = false;
  return true;
}

// The error state makes the HCA flush every work request still out, each completing
// as WR_FLUSH_ERR, which its slice reports as `why`.
void rdma_queue_pair::stop(exchange& x, transfer_status why) {
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  if (ibv_modify_qp(qp_.get(), &attr, IBV_QP_STATE) != 0)
    abort_unflushed("cannot move the QP to the error state with work requests out");
  broken_ = true;
  x.stopped_for = why;
}

void rdma_queue_pair::run(slice_group& group, std::chrono::milliseconds slice_timeout) {
  exchange x{group.items};
  group.started = transfer_clock::now();
  while (x.next < x.items.size() || x.in_flight > 0) {
    post(x);
    if (x.in_flight == 0 || reap(x) > 0 || wait(x, slice_timeout)) continue;
    if (!x.stopped_for.ok()) abort_unflushed("no flush completions after the error state");
    stop(x, {transfer_error::timeout, 0});  // no progress for a whole timeout
  }
}

}  // namespace spillway
