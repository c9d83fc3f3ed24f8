/*
 * cut/cut.h - libcut, the client library of cutd.
 *
 * An application links libcut to exchange messages with the other nodes
 * of its cluster through its own cutd daemon, and to take consistent
 * snapshots (Chandy-Lamport) of the whole cluster without pausing it.
 *
 * The application talks only to its local daemon, over two nng sockets:
 * the application link (every message sent and received, and the daemon's
 * requests for the local state) and, when a control URL is given, the
 * control socket (starting, waiting for and fetching snapshots).
 *
 * The cut.  When the daemon records this node for a snapshot, it asks for
 * the local state.  libcut calls the state callback on the application's
 * thread, inside cut_recv() or cut_dispatch(), between two messages: by
 * default (the unaligned cut) before any further message is returned,
 * even if many have arrived and wait in libcut or the daemon; with the
 * cluster file's `cut = aligned`, only once every message that arrived
 * before the request has been returned.  Messages that had reached the node
 * but were not yet returned are recorded as in transit.  The state the
 * callback reports must include every message returned before it and
 * every cut_send() made before it, and none after.
 * A multi-threaded application therefore takes, in its state callback,
 * the same lock under which it updates its state and sends, and calls
 * cut_buf_set() while it holds that lock; it sends with cut_send_locked(),
 * which lets go of that lock while a full window makes it wait (a
 * cut_send() that waited for credit under the lock would stop the
 * threads that receive, and so the credit itself).
 *
 * Conventions.  Every call that can fail returns 0 or a CUT_E* code, which
 * cut_strerror() names; out-parameters (ret_*) are written only on
 * success.  libcut never logs, never exits and never aborts on bad input.
 * A handle may be used from several threads at once, except that
 * cut_close() must not race with any other call on the same handle.
 * Strings are NUL-terminated UTF-8.
 */
#ifndef CUT_CUT_H
#define CUT_CUT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define CUT_API __attribute__((visibility("default")))
#else
#define CUT_API
#endif

/* The version of libcut, as a string and as numbers. */
#define CUT_VERSION       "0.1.0"
#define CUT_VERSION_MAJOR 0
#define CUT_VERSION_MINOR 1
#define CUT_VERSION_PATCH 0

/* Error codes.  0 means success. */
enum {
	CUT_EINVAL = 1, /* an argument is invalid (or the daemon says so) */
	CUT_ENOMEM,     /* out of memory */
	CUT_ETIMEDOUT,  /* the time allowed passed first */
	CUT_ENOENT,     /* no such node or snapshot */
	CUT_E2BIG,      /* a message or state exceeds the daemon's limit */
	CUT_EPROTO,     /* the daemon sent something that makes no sense */
	CUT_EUNAVAIL,   /* the daemon is not there, or shutting down */
	CUT_ECLOSED,    /* the link to the daemon was lost: reopen */
	CUT_EREFUSED,   /* the daemon refused a request or an earlier item */
	CUT_ENOTSUP,    /* not possible on this handle or protocol version */
	CUT_EBUSY,      /* cut_recv/cut_dispatch called from a callback, or
	                   cut_open: another application is connected */
	CUT_EIO,        /* another transport error */
	CUT_EAGAIN,     /* cut_try_send: no room now; poll cut_send_fd() */
	CUT_EPERM,      /* the daemon denies this call to this user */
	CUT_ELIMIT,     /* over the daemon's limits on requests: retry later */
};

/* The longest snapshot id, including its terminating NUL. */
#define CUT_SNAPSHOT_ID_MAX 128

/* A snapshot's status, as cut_snapshot_status() returns it. */
enum {
	CUT_SNAPSHOT_IN_PROGRESS = 1,
	CUT_SNAPSHOT_COMPLETE = 2,
	CUT_SNAPSHOT_ABORTED = 3,
};

/* Flags of cut_snapshot_get() and cut_snapshot_wait(). */
#define CUT_SNAPSHOT_STATES   0x1 /* fetch the recorded local states */
#define CUT_SNAPSHOT_MESSAGES 0x2 /* fetch every recorded channel message */

/*
 * The content type libcut reports as the state of an application that
 * registered no state callback, with an empty state.
 */
#define CUT_CONTENT_TYPE_EMPTY "application/x-cut-empty"

struct cut;               /* a connection to the local daemon */
struct cut_msg;           /* a received application message */
struct cut_buf;           /* where a state callback puts the state */
struct cut_snapshot;      /* a snapshot as a daemon reported it */
struct cut_snapshot_list; /* the result of cut_snapshot_list() */

/* Returns a static English sentence naming err ("unknown error" if it is
 * none of the codes above).  Never NULL. */
CUT_API const char *cut_strerror(int err);

/*
 * Connection.
 */

/*
 * Connects to the local daemon.  app_url is the daemon's application link
 * (e.g. "ipc:///run/cutd/p0.app"); libcut dials it, waits up to 5 seconds
 * for the daemon to come up and answer its hello, and learns the node's
 * name, cluster, peers and size limit.  node, if not NULL or "", is the
 * node the application expects to run as; the daemon refuses another.
 * control_url (e.g. "ipc:///run/cutd/p0.ctl") may be NULL when the
 * application takes no snapshots; it is dialed on the first control call.
 *
 * app_url may be NULL for a handle that only controls snapshots; then
 * control_url is required, node is ignored, and the messaging calls
 * return CUT_ENOTSUP.
 *
 * With both URLs NULL, libcut finds the local daemon where the systemd
 * unit puts it: the control URL is $CUTD_CONTROL, else /run/cutd/NODE.ctl
 * for node (or $CUTD_NODE when node is NULL or ""), else the only
 * control socket in /run/cutd ($CUTD_RUN_DIR names another directory);
 * the application link is $CUTD_APP, else the control URL with .app for
 * .ctl, else /run/cutd/NODE.app.  So cut_open(NULL, NULL, NULL, &c)
 * works on a host running one cutd@NODE, or with CUTD_CONTROL set.
 * Nothing naming a daemon then returns CUT_EUNAVAIL.
 *
 * Returns 0 and stores a new handle in *ret, which the caller owns and
 * releases with cut_close().  Returns CUT_EINVAL (bad argument or URL),
 * CUT_EUNAVAIL (nothing answered at app_url), CUT_ETIMEDOUT (connected,
 * but no answer to the hello in time), CUT_ENOENT (the daemon runs another
 * node), CUT_ENOTSUP (no common protocol version), CUT_EPROTO or
 * CUT_ENOMEM.  The URLs and node are copied.
 */
CUT_API int cut_open(const char *app_url, const char *control_url,
                     const char *node, struct cut **ret);

/*
 * Closes both sockets and frees c, every message still queued in it and
 * the state callback registration.  Messages already returned
 * (struct cut_msg) stay valid.  Accepts NULL.  Must not run concurrently
 * with another call on c.  It returns within about 1.5 s: up to 1 s for
 * what cut_send() accepted to leave, and up to 0.5 s for the daemon to
 * answer a last sync before the connection closes (which works around an
 * nng 1.5.2 bug that could otherwise hang the close while the daemon is
 * sending); usually within a few tens of milliseconds.
 */
CUT_API void cut_close(struct cut *c);

/* The node's name, as the daemon announced it.  Borrowed until
 * cut_close(); NULL for a control-only handle. */
CUT_API const char *cut_node(const struct cut *c);

/* The cluster's name.  Borrowed until cut_close(); NULL for a
 * control-only handle. */
CUT_API const char *cut_cluster(const struct cut *c);

/* The number of peers: the nodes this node has a channel to, the only
 * valid destinations of cut_send().  0 for a control-only handle. */
CUT_API size_t cut_npeers(const struct cut *c);

/* The i-th peer's name (0 <= i < cut_npeers(c)), or NULL if i is out of
 * range.  Borrowed until cut_close(). */
CUT_API const char *cut_peer(const struct cut *c, size_t i);

/* The largest payload or state, in bytes, the daemon accepts; 0 for a
 * control-only handle. */
CUT_API size_t cut_max_message_size(const struct cut *c);

/*
 * Copies into buf (size bytes, always NUL-terminated if size > 0) the
 * sentence that explains the latest failure on c in more detail than its
 * code: the daemon's message for a refused item or a failed control call,
 * or what was wrong with a bad frame.  Returns the length of the whole
 * sentence, like snprintf(); 0 if there was no failure yet.
 */
CUT_API size_t cut_last_error(struct cut *c, char *buf, size_t size);

/*
 * Messages.
 */

/*
 * Sends len bytes at data to node `to` (one of cut_peer()), with an
 * optional MIME content_type (NULL for none; at most 255 printable ASCII
 * bytes), e.g. "application/json".  The message is on its way when this
 * returns: libcut waits for no answer, and messages (and state replies)
 * leave in the order of the calls, sends made in quick succession sharing
 * one frame.  The daemon delivers it reliably and in order.  data is
 * borrowed for the call (it is copied).
 *
 * Flow control.  Each channel carries at most its window (the cluster
 * file's `window`, 1 MiB by default) of payload bytes that the receiving
 * application has not yet been handed; a single larger message goes when
 * nothing is outstanding.  When the window is full, cut_send() waits for
 * room, up to the handle's send timeout (10 s unless
 * cut_set_send_timeout() says otherwise), and then returns CUT_ETIMEDOUT
 * without sending.  Nothing is ever dropped for want of room.  A program
 * that sends and receives on one thread should use cut_try_send() and
 * keep receiving while a channel is full: two nodes that only send to
 * each other, and never receive, stop when both windows fill.
 *
 * Returns 0; CUT_ENOENT if `to` is not a peer, CUT_E2BIG if len exceeds
 * cut_max_message_size(), in both cases without sending anything;
 * CUT_ETIMEDOUT (no room in time), CUT_EAGAIN (a restore arrived while
 * it waited for room: not sent; see Restore), CUT_EINVAL, CUT_ECLOSED,
 * CUT_ENOTSUP or CUT_ENOMEM.
 */
CUT_API int cut_send(struct cut *c, const char *to, const void *data,
                     size_t len, const char *content_type);

/* cut_send() waiting at most timeout_ms for room (0: not at all, which is
 * cut_try_send(); -1: as long as it takes). */
CUT_API int cut_send_timed(struct cut *c, const char *to, const void *data,
                           size_t len, const char *content_type,
                           int timeout_ms);

/*
 * cut_send() that never waits: returns CUT_EAGAIN, sending nothing, when
 * the channel's window has no room for len bytes now.  The descriptor of
 * cut_send_fd() then becomes readable when credit for the channels comes
 * back; try again then.
 */
CUT_API int cut_try_send(struct cut *c, const char *to, const void *data,
                         size_t len, const char *content_type);

/*
 * cut_send() for a multi-threaded application: called with the
 * application's own lock mu held (the one its state callback takes), it
 * sends as cut_send() does, but while the channel's window is full it
 * lets go of mu as it waits (as pthread_cond_wait() does), so that the
 * application's receiving threads can take their messages and answer
 * state requests, and the credit can come back.  It returns with mu held
 * in every case.  The message is queued while mu is held: change the
 * state it stands for (a balance, say) after it returns 0, before
 * unlocking, and a snapshot sees both or neither.  It waits up to the
 * handle's send timeout, like cut_send(), and returns what cut_send()
 * returns; CUT_EINVAL if mu is NULL.
 */
CUT_API int cut_send_locked(struct cut *c, pthread_mutex_t *mu, const char *to,
                            const void *data, size_t len,
                            const char *content_type);

/*
 * Waits until the daemon holds every message cut_send() accepted before
 * this call, up to timeout_ms (-1: no limit; 0: only if it is known
 * already).  A message cut_send() accepted is kept by libcut until the
 * receiving application has taken it, so it survives a restart of either
 * daemon; but libcut dies with the application.  If the application dies,
 * the messages its daemon had not yet read from its socket are lost, and
 * the rest are delivered.  After cut_flush() returned 0, the death of the
 * application loses none of the messages sent before it (the death of the
 * application and of its daemon together still may).  It costs a round
 * trip to the daemon: call it where the application commits to something,
 * not after every send.
 *
 * Returns 0, CUT_ETIMEDOUT, CUT_ECLOSED (the link is lost and the daemon
 * has not answered again), CUT_EINVAL, CUT_ENOTSUP.
 */
CUT_API int cut_flush(struct cut *c, int timeout_ms);

/*
 * Stores in *ret_fd a descriptor (for poll() or an event loop) that becomes
 * readable when credit arrives after a cut_try_send() returned CUT_EAGAIN.
 * cut_try_send() empties it; do not read or close it.  Returns 0,
 * CUT_EINVAL or CUT_ENOTSUP on a control-only handle.
 */
CUT_API int cut_send_fd(struct cut *c, int *ret_fd);

/* Sets how long cut_send() waits for room, in milliseconds (-1: no limit,
 * 0: never wait, like cut_try_send()).  Returns 0 or CUT_EINVAL. */
CUT_API int cut_set_send_timeout(struct cut *c, int timeout_ms);

/*
 * Receives the next application message, waiting up to timeout_ms
 * milliseconds (0: do not wait, -1: forever).  On the way it answers the
 * daemon's state requests that come before it, by calling the state
 * callback (see cut_set_state_callback()).
 *
 * Returns 0 and stores the message in *ret; the caller owns it and frees
 * it with cut_msg_free().  Returns CUT_ETIMEDOUT if no message came in
 * time; CUT_EREFUSED when the next item is the daemon refusing an earlier
 * one of ours (cut_last_error() says why; the item is consumed, the next
 * call goes on); CUT_EPROTO when the daemon sent a frame that does not
 * decode (it is dropped, the next call goes on); CUT_ECLOSED when the link
 * was lost; CUT_EBUSY when called from a callback of c; CUT_ENOTSUP on a
 * control-only handle.
 *
 * Only one thread receives at a time: others wait for it.
 */
CUT_API int cut_recv(struct cut *c, int timeout_ms, struct cut_msg **ret);

/* The sending node of m.  Borrowed until cut_msg_free(m). */
CUT_API const char *cut_msg_from(const struct cut_msg *m);
/* The payload of m (cut_msg_len(m) bytes, followed by a NUL byte that is
 * not part of it).  Borrowed until cut_msg_free(m). */
CUT_API const void *cut_msg_data(const struct cut_msg *m);
/* The payload's length in bytes. */
CUT_API size_t cut_msg_len(const struct cut_msg *m);
/* The content type the sender gave, or NULL if none.  Borrowed until
 * cut_msg_free(m). */
CUT_API const char *cut_msg_content_type(const struct cut_msg *m);
/* The message's sequence number on its channel (the sender's n-th message
 * to this node, from 1), or 0 if the daemon did not say. */
CUT_API uint64_t cut_msg_seq(const struct cut_msg *m);
/* Frees m.  Accepts NULL. */
CUT_API void cut_msg_free(struct cut_msg *m);

/*
 * Stores in *ret_fd a file descriptor that becomes readable when items
 * from the daemon are waiting, for poll() or an event loop; then call
 * cut_dispatch(), which empties it (and makes it readable again if it left
 * items for the next call).  The descriptor belongs to c: do not read from
 * it or close it.  Use cut_dispatch(), not cut_recv(), with it.
 * Returns 0, or CUT_ENOTSUP on a control-only handle.
 */
CUT_API int cut_fd(struct cut *c, int *ret_fd);

/* Called by cut_dispatch() for each message; m is borrowed for the call. */
typedef void (*cut_msg_fn)(void *arg, const struct cut_msg *m);

/*
 * Processes, without waiting, every item the daemon has sent so far, in
 * order: calls fn(arg, m) for each message and the state callback for each
 * state request.  fn may call cut_send() but not cut_recv() or
 * cut_dispatch().
 *
 * Returns 0 once nothing is left; CUT_EREFUSED or CUT_EPROTO if a refused
 * item or a bad frame was met on the way (the others were processed;
 * cut_last_error() describes the last one); CUT_ECLOSED, CUT_EBUSY,
 * CUT_ENOTSUP or CUT_ENOMEM.
 */
CUT_API int cut_dispatch(struct cut *c, cut_msg_fn fn, void *arg);

/*
 * The state callback.  libcut calls it, on the thread in cut_recv() or
 * cut_dispatch(), when the daemon asks for this node's state for snapshot
 * snapshot_id (borrowed for the call).  It calls cut_buf_set(ret_state,
 * ...) once, under the application's own lock, and returns 0.
 *
 * If it returns 0 without calling cut_buf_set(), the state is empty with
 * content type CUT_CONTENT_TYPE_EMPTY.  If it returns non-zero without
 * calling cut_buf_set(), libcut does not answer, and the daemon aborts the
 * snapshot when its deadline passes.  It must not call cut_recv() or
 * cut_dispatch().
 */
typedef int (*cut_state_fn)(void *arg, const char *snapshot_id,
                            struct cut_buf *ret_state);

/*
 * Registers fn (with arg) as c's state callback, replacing any earlier
 * one; fn NULL removes it (then every state request is answered with an
 * empty state, content type CUT_CONTENT_TYPE_EMPTY).  Returns 0, or
 * CUT_EINVAL if c is NULL.
 */
CUT_API int cut_set_state_callback(struct cut *c, cut_state_fn fn, void *arg);

/*
 * From a state callback: reports len bytes at data as the local state,
 * with an optional content_type (NULL for none), and sends the reply to
 * the daemon at once, so that it takes its place among the messages sent
 * by other threads exactly here.  data is copied.  Call it at most once
 * per callback.  Returns 0; CUT_E2BIG if len exceeds
 * cut_max_message_size() (nothing is sent); CUT_EINVAL (second call, bad
 * content type), CUT_ECLOSED, CUT_ETIMEDOUT or CUT_ENOMEM.
 */
CUT_API int cut_buf_set(struct cut_buf *b, const void *data, size_t len,
                        const char *content_type);

/*
 * Restore.  `cutctl restore ID` (or cut_restore()) puts the whole cluster
 * back into a complete, consistent snapshot: every node's application gets
 * the state it recorded, and the messages the snapshot recorded in
 * transit are delivered again.  libcut calls the restore callback on the
 * thread in cut_recv() or cut_dispatch(), like the state callback, at the
 * restore's place in the stream from the daemon.  Before it, libcut drops
 * every message and state request it had received but not yet returned
 * (they belong to before the restore) and forgets the messages it kept
 * for sending again; after it, the messages returned are first the
 * recorded in-transit ones, then new traffic.  Each channel's numbering
 * (cut_msg_seq()) continues from the snapshot's.
 *
 * Sends.  The restore takes effect for the up stream in one step (libcut
 * takes its send lock, renumbers the channels and tells the daemon), by
 * default right after the callback returns, or where the callback calls
 * cut_restore_commit().  Every cut_send() that returned before that step
 * belongs to before the restore and is discarded by the daemon (its
 * message is never delivered); every one after it is numbered from the
 * snapshot's positions and delivered.  The credit of every channel starts
 * again from nothing and comes back from the daemon just after the step.
 * A cut_send() waiting for room when a restore arrives returns
 * CUT_EAGAIN at once, its message not sent (it is from before the
 * restore; and the credit it waits for comes only after the step, which
 * the thread in it may be the one to take); between the step and the
 * fresh credit, cut_send() waits as usual and cut_try_send() returns
 * CUT_EAGAIN.  A multi-threaded application therefore takes, in its
 * restore callback, the same lock under which it updates its state and
 * calls cut_send(), and calls cut_restore_commit() while it holds that
 * lock (else the sends other threads make between the callback's
 * unlocking and its return still count as before the restore).
 */

/*
 * The restore callback.  libcut calls it, on the thread in cut_recv() or
 * cut_dispatch(), when the cluster is restored to snapshot snapshot_id:
 * state (len bytes, with content_type, NULL if none) is what this node's
 * state callback recorded for it, all borrowed for the call.  It replaces
 * the application's state with that one, under the application's own
 * lock, and returns 0.  Non-zero means it could not: libcut reports the
 * failure (the value as its code) to the daemon, which reports this node
 * as failed to the restorer; the application keeps the state it has.
 * It must not call cut_recv() or cut_dispatch().
 */
typedef int (*cut_restore_fn)(void *arg, const char *snapshot_id,
                              const void *state, size_t len,
                              const char *content_type);

/*
 * Registers fn (with arg) as c's restore callback, replacing any earlier
 * one; fn NULL removes it.  libcut tells the daemon at once, and again
 * after every reconnection, whether one is registered: a restore is
 * refused, before anything changes anywhere, while a node's application
 * has none.  If a restore reaches an application that has just removed
 * its callback, libcut reports the restore failed (CUT_ENOTSUP) and the
 * application keeps its state, but the messages libcut held are dropped
 * and the channels renumbered all the same, as for any restore.  Returns
 * 0, or CUT_EINVAL if c is NULL.
 */
CUT_API int cut_set_restore_callback(struct cut *c, cut_restore_fn fn,
                                     void *arg);

/*
 * From a restore callback, after it replaced the state and while it
 * still holds the application's lock: takes the restore's step for the
 * sends now instead of when the callback returns, and tells the daemon
 * the restore was taken, so that the step sits exactly between the sends
 * of other threads made before the state was replaced and those made
 * after.  Optional; call it at most once per callback, and the callback
 * then returns 0 (a non-zero return is no longer reported).  Sends the
 * callback itself makes count as before the restore before this call
 * and as after it after.  Returns 0; CUT_EINVAL outside a restore
 * callback or on a second call; CUT_ENOMEM.
 */
CUT_API int cut_restore_commit(struct cut *c);

/*
 * Snapshots (need a control URL).
 *
 * The control calls each wait up to the control timeout (5000 ms unless
 * set with cut_set_control_timeout()) for the daemon's answer, and resend
 * a request that timed out once: the daemon executes it only once.  They
 * return, besides the codes named: CUT_ENOTSUP (no control URL),
 * CUT_EUNAVAIL (no daemon at the control URL, or shutting down),
 * CUT_ETIMEDOUT, CUT_EREFUSED (the daemon refused: e.g. a snapshot in
 * progress), CUT_EPERM (this process's user may not make this call, or
 * may not connect to the control socket at all: see below), CUT_ELIMIT
 * (the daemon's limits on snapshots in flight or on the rate of starts),
 * CUT_EPROTO, CUT_ENOMEM.  After a failure cut_last_error() has the
 * daemon's message.
 *
 * Permissions.  The control socket is open to the daemon's user, root
 * and the cluster file's socket_group; to anyone else connecting is
 * CUT_EPERM.  Anyone who can connect to the control socket may read
 * (list, get, wait).  Deleting is for the daemon's user, root and the
 * cluster file's admin_group.  Starting a snapshot is for them and for
 * the user of the application connected to the daemon: an application
 * may start snapshots through its own node's control URL, and another
 * node's daemon returns CUT_EPERM unless the user is an admin there.
 */

/* Sets how long each control call waits for the daemon's answer, in
 * milliseconds (> 0).  Returns 0 or CUT_EINVAL. */
CUT_API int cut_set_control_timeout(struct cut *c, int timeout_ms);

/*
 * Starts a snapshot with this daemon's node as initiator, and returns at
 * once.  deadline_ms is how long it may take before the daemon aborts it
 * (0: the cluster's default).  Copies its id, NUL-terminated, into ret_id
 * (idlen bytes; CUT_SNAPSHOT_ID_MAX always suffices).  Returns 0, or
 * CUT_EINVAL if the id does not fit (the snapshot was started anyway),
 * CUT_ELIMIT if the daemon is at max_snapshots_in_flight or start_rate
 * (nothing was started; retry later), CUT_EPERM (see Permissions).
 */
CUT_API int cut_snapshot_start(struct cut *c, int deadline_ms, char *ret_id,
                               size_t idlen);

/*
 * Fetches snapshot id as the daemon knows it now; flags is 0 or a
 * combination of CUT_SNAPSHOT_STATES and CUT_SNAPSHOT_MESSAGES (all
 * channel messages, fetched page by page as needed).  Returns 0 and stores
 * it in *ret, which the caller frees with cut_snapshot_free(); CUT_ENOENT
 * if the daemon does not know the id.
 */
CUT_API int cut_snapshot_get(struct cut *c, const char *id, int flags,
                             struct cut_snapshot **ret);

/*
 * Waits until snapshot id is complete or aborted, up to timeout_ms
 * milliseconds (-1: as long as it takes), then fetches it as
 * cut_snapshot_get() does.  Returns 0 and stores it in *ret (check its
 * status: aborted is a result, not an error); CUT_ETIMEDOUT if it was
 * still in progress when the time ran out; CUT_ENOENT for an unknown id.
 */
CUT_API int cut_snapshot_wait(struct cut *c, const char *id, int timeout_ms,
                              int flags, struct cut_snapshot **ret);

/*
 * Lists the snapshots the daemon knows, newest first, at most limit of
 * them (0: all), without nodes and channels.  Returns 0 and stores the
 * list in *ret, which the caller frees with cut_snapshot_list_free().
 */
CUT_API int cut_snapshot_list(struct cut *c, unsigned limit,
                              struct cut_snapshot_list **ret);

/* The number of snapshots in l. */
CUT_API size_t cut_snapshot_list_len(const struct cut_snapshot_list *l);
/* The i-th snapshot of l, or NULL if i is out of range.  Borrowed until
 * cut_snapshot_list_free(l). */
CUT_API const struct cut_snapshot *
cut_snapshot_list_at(const struct cut_snapshot_list *l, size_t i);
/* Frees l and its snapshots.  Accepts NULL. */
CUT_API void cut_snapshot_list_free(struct cut_snapshot_list *l);

/* Deletes a finished snapshot from the daemon's database.  Returns 0,
 * CUT_ENOENT if unknown, CUT_EREFUSED while it is in progress, CUT_EPERM
 * unless this process runs as the daemon's user, root or a member of
 * admin_group. */
CUT_API int cut_snapshot_delete(struct cut *c, const char *id);

/* What cut_restore() reports of a restore that succeeded. */
struct cut_restore_result {
	uint64_t generation;    /* the cluster's restore generation now */
	unsigned nodes;         /* the nodes restored (all of them) */
	uint64_t replayed;      /* in-transit messages delivered again */
	uint64_t state_bytes;   /* the bytes of the states restored */
	uint64_t message_bytes; /* the bytes of the messages replayed */
};

/*
 * Restores the whole cluster to snapshot snapshot_id, a complete and
 * consistent one this daemon's node initiated, on every node at once (see
 * cut_set_restore_callback()), and waits until every node has taken it.
 * timeout_ms bounds how long the daemon waits for every node's agreement
 * and then its confirmation (0: the cluster file's deadline_ms).  Returns
 * 0 and fills *ret (which may be NULL); CUT_ENOENT if the daemon does not
 * know the snapshot; CUT_EREFUSED if it cannot be restored (not complete
 * or not consistent, a node whose application registered no restore
 * callback, a snapshot or restore in progress: nothing was changed);
 * CUT_ETIMEDOUT if the nodes did not all answer in time; CUT_EPERM (see
 * Permissions).
 */
CUT_API int cut_restore(struct cut *c, const char *snapshot_id,
                        uint32_t timeout_ms, struct cut_restore_result *ret);

/* Frees s.  Accepts NULL. */
CUT_API void cut_snapshot_free(struct cut_snapshot *s);

/*
 * Snapshot accessors.  Strings and bytes they return are borrowed until s
 * is freed.  At the initiator a snapshot covers the whole cluster; at
 * another node, only what that node recorded.
 */

/* The snapshot's id and initiating node. */
CUT_API const char *cut_snapshot_id(const struct cut_snapshot *s);
CUT_API const char *cut_snapshot_initiator(const struct cut_snapshot *s);
/* CUT_SNAPSHOT_IN_PROGRESS, _COMPLETE or _ABORTED. */
CUT_API int cut_snapshot_status(const struct cut_snapshot *s);
/* Why it was aborted, naming the node or channel; "" otherwise. */
CUT_API const char *cut_snapshot_reason(const struct cut_snapshot *s);
/* Unix milliseconds when it started, and when it finished (0 before). */
CUT_API uint64_t cut_snapshot_started_ms(const struct cut_snapshot *s);
CUT_API uint64_t cut_snapshot_finished_ms(const struct cut_snapshot *s);
/* Nodes whose part has arrived, the number of nodes, and the channels
 * whose recording is not yet known to be finished. */
CUT_API unsigned cut_snapshot_parts(const struct cut_snapshot *s);
CUT_API unsigned cut_snapshot_parts_expected(const struct cut_snapshot *s);
CUT_API unsigned cut_snapshot_channels_recording(const struct cut_snapshot *s);
/* The audit: 1 consistent, 0 inconsistent, -1 not audited (yet). */
CUT_API int cut_snapshot_consistent(const struct cut_snapshot *s);
/* The audit's problems as sentences; "" when consistent or not audited. */
CUT_API const char *cut_snapshot_audit_reason(const struct cut_snapshot *s);

/* The recorded nodes (none in a listed snapshot). */
CUT_API size_t cut_snapshot_nnodes(const struct cut_snapshot *s);
/* Node i's name, or NULL if i is out of range. */
CUT_API const char *cut_snapshot_node(const struct cut_snapshot *s, size_t i);
/* Node i's state content type, or NULL if none or out of range. */
CUT_API const char *cut_snapshot_node_content_type(const struct cut_snapshot *s,
                                                   size_t i);
/* Node i's state and its size in *ret_len, or NULL if it was not fetched
 * (CUT_SNAPSHOT_STATES) or i is out of range. */
CUT_API const void *cut_snapshot_node_state(const struct cut_snapshot *s,
                                            size_t i, size_t *ret_len);

/* The recorded channels (none in a listed snapshot). */
CUT_API size_t cut_snapshot_nchannels(const struct cut_snapshot *s);
/*
 * Channel i: its source and destination node, m (messages delivered
 * before the destination recorded), n (sent before the source recorded)
 * and the number of messages recorded in it (in transit in the cut).  Any
 * ret_* may be NULL.  Returns 0, or CUT_EINVAL if i is out of range.
 */
CUT_API int cut_snapshot_channel(const struct cut_snapshot *s, size_t i,
                                 const char **ret_src, const char **ret_dst,
                                 uint64_t *ret_m, uint64_t *ret_n,
                                 uint64_t *ret_count);
/* The recorded messages of channel i that were fetched
 * (CUT_SNAPSHOT_MESSAGES); 0 if none or out of range. */
CUT_API size_t cut_snapshot_channel_nmessages(const struct cut_snapshot *s,
                                              size_t i);
/*
 * Message j of channel i, in seq order: its sequence number, content type
 * (NULL if none) and payload.  Any ret_* may be NULL.  Returns 0, or CUT_EINVAL
 * if out of range.
 */
CUT_API int cut_snapshot_channel_message(const struct cut_snapshot *s, size_t i,
                                         size_t j, uint64_t *ret_seq,
                                         const char **ret_content_type,
                                         const void **ret_data,
                                         size_t *ret_len);

#ifdef __cplusplus
}
#endif

#endif /* CUT_CUT_H */
