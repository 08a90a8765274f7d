// The owner's side of one tcp lane: reads frames, checks each against the segment
// table before touching memory, moves the bytes and answers with status frames.
#pragma once

#include <functional>

#include "runtime/net/segment.hpp"

namespace spillway {

// Serves the connection on `fd` until the peer closes it, a frame is rejected (after
// its status frame is sent) or `after_slice` returns false. Returns the error of the
// rejected frame that ended it, `none` otherwise. Closes nothing: the caller owns `fd`.
transfer_error serve_tcp_session(int fd, const segment_table& segments,
                                 const std::function<bool()>& after_slice);

}  // namespace spillway
