// The owner's side of one tcp lane: admits it by its hello (lane_admission.hpp), then
// reads frames, checks each against the segment table (bounds, and that the segment is
// exported to the lane's peer, writable for a write) before touching memory, moves
// the bytes and answers with status frames. Every wait is bounded: an idle lane for
// `idle_timeout`, a frame begun (header, secret or payload) for `frame_timeout`.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "runtime/net/lane_admission.hpp"
#include "runtime/net/segment.hpp"

namespace spillway {

struct tcp_session_limits {
  std::chrono::milliseconds idle_timeout{30000};
  std::chrono::milliseconds frame_timeout{5000};
};

// How a session ended.
enum class session_end {
  closed,         // the peer closed it, or it broke (reset, failed send)
  stopped,        // after_slice said so
  refused_frame,  // a frame failed its checks (its status frame was sent)
  not_admitted,   // the first frame was no hello, or its ticket was wrong
  idle_timeout,   // no frame began within idle_timeout
  frame_timeout,  // a frame begun did not complete within frame_timeout
};

const char* name_of(session_end end);

struct session_result {
  session_end end = session_end::closed;
  transfer_error error = transfer_error::none;  // refused_frame: why
  std::string peer;  // the identity the hello proved; empty before
  const char* reason = "";  // not_admitted: why
};

// Serves the connection on `fd` until one of the ends above. Closes nothing: the caller
// owns `fd`. A write frame cut short (closed, timed out) leaves the bytes of its range
// that did arrive in the segment: the requester's slice fails, so the range's content
// is undefined until a write to it succeeds (README "Data lanes").
// `refusing` runs before a refused frame's status goes out, so that a requester who
// reads that status finds the refusal already counted.
session_result serve_tcp_session(int fd, const segment_table& segments,
                                 const lane_admission& admission,
                                 const tcp_session_limits& limits,
                                 const std::function<bool()>& after_slice,
                                 const std::function<void(transfer_error)>& refusing = {});

}  // namespace spillway
