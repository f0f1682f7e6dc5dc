package cursor

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Timeout is how long a cursor may sit idle before it is closed (MongoDB's
// cursorTimeoutMillis, 10 minutes).
const Timeout = 10 * time.Minute

// MaxPerConnection caps the cursors one connection has opened and not yet exhausted,
// killed or let time out; one more fails with OperationFailed (96) and closes the new
// cursor. MongoDB has no such cap; it bounds what one client can pin (snapshots, iterators,
// pending documents) for ten minutes.
const MaxPerConnection = 10_000

// MaxBatchBytes bounds the documents of one reply batch, leaving room in a 16 MiB + 16 KiB
// reply for the envelope, as MongoDB does.
const MaxBatchBytes = wire.MaxBSONSize

// Cursor is an open query result that getMore continues. Only one getMore may use a cursor
// at a time (MongoDB answers CursorInUse otherwise).
type Cursor struct {
	ID        int64
	Ns        string // "db.coll", for the reply
	Stream    stream.Stream
	pending   bsoncore.Document // a document read but not sent: it did not fit the last batch
	Limit     int64             // documents still allowed, 0 = no limit
	NoTimeout bool
	LastUsed  atomic.Int64 // unix nanoseconds
	InUse     atomic.Bool
	// release runs when the cursor closes (per-query resources beyond the stream).
	release func()
	// LSID is the session the cursor was opened in (hasSession): it closes with the session
	// (killSessions, or the session's expiry), whatever its own timeout.
	LSID       [16]byte
	HasSession bool
	// Users are those the opening connection was authenticated as: with access control on,
	// only a connection authenticated as one of them (or, for none, an unauthenticated one)
	// continues the cursor (CheckUsers).
	Users []auth.UserName
	// OpenedBy counts the open cursors of the connection that registered this one; Close
	// gives its slot back.
	OpenedBy *atomic.Int32
	// Coll is the collection a find or aggregate cursor reads (nil for catalog listings):
	// once it is dropped or renamed, getMore fails with QueryPlanKilled as mongod's yield
	// recovery does, rather than serving its old snapshot.
	Coll *store.Collection
	// TimeLeft is what remains of the opening command's maxTimeMS (0: no limit). Each
	// getMore runs under it and keeps what it did not use, as MongoDB's leftover time does.
	TimeLeft time.Duration
	// Tailable cursors stay open at the end of what there is: a capped collection's tail
	// (crud's tail.go) or a change stream's events. An awaitData one's getMore waits for more
	// on Waiter (the capped collection's wake channel, the change streams' hub). LimitHit
	// reports that the cursor returned its limit; Ended, when set, that a tailable cursor is
	// done for good (an invalidated change stream) and closes.
	Tailable, AwaitData bool
	Waiter              interface{ Wait() <-chan struct{} }
	Ended               func() bool
	Tail                *query.Tail
	LimitHit            bool
	// Trailer, when set, appends fields to the cursor document after the batch (a change
	// stream's postBatchResumeToken).
	Trailer func(dst []byte) []byte
	// use guards the hand-over of the cursor between a getMore (InUse) and whoever removes
	// it meanwhile (closeUnlessInUse).
	use struct {
		sync.Mutex
		closing, closeLater bool
	}
	// Charged, when set, returns the request units the cursor's stream spent since it was
	// last called, which the getMore that ran it is charged (a change stream's reads).
	Charged func() float64
	// Yields: the cursor reads the present (not a snapshot read or a transaction's): between
	// batches, and inside a long one (stream.YieldPolicy), its stream gives up its read view
	// (stream.Yielder), so that what it reads next is the data as it is then and neither an
	// idle cursor nor a long batch pins a snapshot.
	Yields bool
}

// Registry holds the open cursors of an Executor.
type Registry struct {
	mu struct {
		sync.Mutex
		m map[int64]*Cursor
	}
	stop chan struct{}
	// opened and timedOut count the cursors registered and those the reaper closed idle
	// (serverStatus' metrics.cursor).
	opened, timedOut atomic.Int64
	// sessionAlive reports whether a session is still live (sessionCache.alive); nil: all
	// are.
	sessionAlive func(lsid [16]byte, now time.Time) bool
}

// NewRegistry returns a registry whose reaper closes idle cursors, and those of
// sessions no longer alive (nil: never), every interval.
func NewRegistry(interval time.Duration, alive func(lsid [16]byte, now time.Time) bool) *Registry {
	r := &Registry{stop: make(chan struct{}), sessionAlive: alive}
	r.mu.m = map[int64]*Cursor{}
	go r.reap(interval)
	return r
}

// Add registers c under a fresh random non-zero id and returns the id.
func (r *Registry) Add(c *Cursor) int64 {
	c.LastUsed.Store(time.Now().UnixNano())
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id := int64(binary.LittleEndian.Uint64(b[:]) &^ (1 << 63))
		if id == 0 || r.mu.m[id] != nil {
			continue
		}
		c.ID = id
		r.mu.m[id] = c
		r.opened.Add(1)
		return id
	}
}

// Acquire returns the cursor id for exclusive use by one getMore; release it with done.
func (r *Registry) Acquire(id int64) (*Cursor, error) {
	r.mu.Lock()
	c := r.mu.m[id]
	r.mu.Unlock()
	if c == nil {
		return nil, mongoerr.New(mongoerr.CursorNotFound, "cursor id %d not found", id)
	}
	c.use.Lock()
	defer c.use.Unlock()
	if c.use.closing { // removed since it was looked up
		return nil, mongoerr.New(mongoerr.CursorNotFound, "cursor id %d not found", id)
	}
	if !c.InUse.CompareAndSwap(false, true) {
		return nil, mongoerr.New(mongoerr.CursorInUse, "Cursor already in use (namespace: '%s', id: %d).", c.Ns, id)
	}
	return c, nil
}

// Done ends a getMore's use of c; an exhausted cursor is removed and closed, and so is one
// that was removed (killCursors, a session's end) while the getMore used it.
func (r *Registry) Done(c *Cursor, exhausted bool) {
	c.LastUsed.Store(time.Now().UnixNano())
	if exhausted {
		r.Remove(c.ID)
	}
	c.use.Lock()
	c.InUse.Store(false)
	later := c.use.closeLater
	c.use.closeLater = false
	c.use.Unlock()
	if later {
		c.Close()
	}
}

// closeUnlessInUse closes a cursor that was just unregistered, or, while a getMore uses it,
// leaves the close to that getMore's Done: its stream is not safe for concurrent use.
func (c *Cursor) closeUnlessInUse() {
	c.use.Lock()
	c.use.closing = true
	if c.InUse.Load() {
		c.use.closeLater = true
		c.use.Unlock()
		return
	}
	c.use.Unlock()
	c.Close()
}

// Metrics are the counts of serverStatus' metrics.cursor.
type Metrics struct {
	Open, NoTimeout, Opened, TimedOut int64
}

// Metrics returns the open cursors (and those of them without a timeout), and the cursors
// registered and timed out since the registry started.
func (r *Registry) Metrics() Metrics {
	m := Metrics{Opened: r.opened.Load(), TimedOut: r.timedOut.Load()}
	r.mu.Lock()
	m.Open = int64(len(r.mu.m))
	for _, c := range r.mu.m {
		if c.NoTimeout {
			m.NoTimeout++
		}
	}
	r.mu.Unlock()
	return m
}

// Remove unregisters and closes the cursor id; it reports whether it existed.
func (r *Registry) Remove(id int64) bool {
	r.mu.Lock()
	c := r.mu.m[id]
	delete(r.mu.m, id)
	r.mu.Unlock()
	if c == nil {
		return false
	}
	c.closeUnlessInUse()
	return true
}

// RemoveInIf closes cursor id if it belongs to namespace ns and may, given the cursor,
// answers nil, and reports whether it did (killCursors): may's error is returned and the
// cursor lives on. A cursor in use is closed when its command is done.
func (r *Registry) RemoveInIf(id int64, ns string, may func(*Cursor) error) (bool, error) {
	r.mu.Lock()
	c := r.mu.m[id]
	if c == nil || c.Ns != ns {
		r.mu.Unlock()
		return false, nil
	}
	if err := may(c); err != nil {
		r.mu.Unlock()
		return false, err
	}
	delete(r.mu.m, id)
	r.mu.Unlock()
	c.closeUnlessInUse()
	return true, nil
}

// reap closes cursors idle for longer than cursorTimeout, until close is called.
func (r *Registry) reap(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case now := <-t.C:
			r.Expire(now)
		}
	}
}

// Expire closes every idle, timeout-eligible cursor not in use as of now.
func (r *Registry) Expire(now time.Time) {
	cutoff := now.Add(-Timeout).UnixNano()
	var dead []*Cursor
	r.mu.Lock()
	for id, c := range r.mu.m {
		idle := !c.NoTimeout && c.LastUsed.Load() < cutoff
		orphaned := c.HasSession && r.sessionAlive != nil && !r.sessionAlive(c.LSID, now)
		if !c.InUse.Load() && (idle || orphaned) {
			delete(r.mu.m, id)
			dead = append(dead, c)
			if idle {
				r.timedOut.Add(1)
			}
		}
	}
	r.mu.Unlock()
	for _, c := range dead {
		c.closeUnlessInUse()
	}
}

// RemoveSessions closes the cursors of the sessions for which match is true.
func (r *Registry) RemoveSessions(match func(lsid [16]byte) bool) {
	var dead []*Cursor
	r.mu.Lock()
	for id, c := range r.mu.m {
		if c.HasSession && match(c.LSID) {
			delete(r.mu.m, id)
			dead = append(dead, c)
		}
	}
	r.mu.Unlock()
	for _, c := range dead {
		c.closeUnlessInUse()
	}
}

// CloseAll stops the reaper and closes every cursor (server shutdown).
func (r *Registry) CloseAll() {
	close(r.stop)
	r.mu.Lock()
	all := r.mu.m
	r.mu.m = map[int64]*Cursor{}
	r.mu.Unlock()
	for _, c := range all {
		c.closeUnlessInUse()
	}
}

// Close releases the cursor's stream and resources.
func (c *Cursor) Close() {
	if c.OpenedBy != nil {
		c.OpenedBy.Add(-1)
		c.OpenedBy = nil
	}
	c.Stream.Close()
	if c.release != nil {
		c.release()
		c.release = nil
	}
}

// FillBatch appends up to n documents (n <= 0: no count limit) to the open array dst, within
// maxBatchBytes and the cursor's remaining limit, and reports whether the result is exhausted. A document that does not fit is
// kept as pending for the next batch; one document is always sent even if it alone is large.
func (c *Cursor) FillBatch(ctx context.Context, dst []byte, n int64, mem *stream.Reservation) ([]byte, bool, error) {
	if c.Tail != nil {
		defer c.Tail.Yield() // the next batch starts again from the position
	}
	start := len(dst)
	var i int64
	// NB: a long batch yields inside itself too (stream.YieldPolicy), so that it pins no
	// snapshot, memtable or sstable for its whole duration and reads what it reaches as it is
	// then; a tailable cursor's position is its Tail's, which yields after the batch.
	yields := c.Yields && c.Tail == nil
	y := stream.NewYieldPolicy()
	for n <= 0 || i < n {
		if c.Limit > 0 && i >= c.Limit {
			break
		}
		doc := c.pending
		c.pending = nil
		if doc == nil {
			var err error
			doc, err = c.Stream.Next(ctx)
			if err != nil {
				return dst, false, err
			}
			if doc == nil {
				return dst, true, nil
			}
		}
		if i > 0 && (len(dst)-start+len(doc) > MaxBatchBytes || !mem.Grow(int64(len(doc)))) {
			c.pending = append(bsoncore.Document(nil), doc...)
			break
		}
		if i == 0 {
			mem.Force(int64(len(doc))) // a batch sends at least one document
		}
		dst = bsoncore.AppendDocumentElement(dst, bsonx.ArrayKey(int(i)), doc)
		i++
		if yields && y.Due() {
			stream.Yield(c.Stream, false)
		}
	}
	if c.Limit > 0 {
		c.Limit -= i
		if c.Limit <= 0 {
			c.LimitHit = true
			return dst, true, nil
		}
	}
	// NB: no peek past a full batch: it could scan far for a selective filter, which MongoDB
	// defers to the next getMore. The cursor stays open and a later getMore may return an
	// empty final batch, as mongod's does.
	return dst, false, nil
}

// Yield gives up the stream's read view after a batch, when the cursor reads the present;
// a document read but not sent (pending) is read again, from the present, when the stream
// can put it back.
func (c *Cursor) Yield() {
	if !c.Yields {
		return
	}
	if c.pending != nil {
		if stream.Yield(c.Stream, true) {
			c.pending = nil
		}
		return
	}
	stream.Yield(c.Stream, false)
}

// CheckSession refuses a getMore (body) from another session than the cursor's, as mongos
// does (validateLSID in cluster_find.cpp): a cursor opened in a session is continued only
// in it, and one opened outside any session only outside one.
func (c *Cursor) CheckSession(body bsoncore.Document) error {
	lsid, has := args.LSID(body)
	switch {
	case has && !c.HasSession:
		return mongoerr.New(mongoerr.Location50799, "Cannot run getMore on cursor %d, which was not created in a session, in session %s", c.ID, args.SessionString(lsid))
	case !has && c.HasSession:
		return mongoerr.New(mongoerr.Location50800, "Cannot run getMore on cursor %d, which was created in session %s, without an lsid", c.ID, args.SessionString(c.LSID))
	case has && lsid != c.LSID:
		return mongoerr.New(mongoerr.Location50801, "Cannot run getMore on cursor %d, which was created in session %s, in session %s", c.ID, args.SessionString(c.LSID), args.SessionString(lsid))
	}
	return nil
}

// CheckUsers refuses a getMore from a connection authenticated as users when none of them
// opened the cursor, as mongos's cursor manager does at checkout (checkOutCursor with
// isCoauthorizedWith): Unauthorized 13. A cursor opened unauthenticated is continued only
// unauthenticated. The caller checks only with access control on.
func (c *Cursor) CheckUsers(users []auth.UserName) error {
	if len(c.Users) == 0 && len(users) == 0 {
		return nil
	}
	for _, u := range users {
		if slices.Contains(c.Users, u) {
			return nil
		}
	}
	return mongoerr.New(mongoerr.Unauthorized, "cursor id %d was not created by the authenticated user :: caused by :: User not authorized to access cursor", c.ID)
}

// CheckKill refuses killCursors from a connection authenticated as users when none of them
// opened the cursor and they may not kill any cursor (MongoDB's killAnyCursor, anyCursor):
// Unauthorized 13, as checkAuthForKillCursors answers. The caller checks only with access
// control on.
func (c *Cursor) CheckKill(users []auth.UserName, anyCursor bool) error {
	if anyCursor || c.CheckUsers(users) == nil {
		return nil
	}
	return mongoerr.New(mongoerr.Unauthorized, "not authorized to kill cursor on %s", c.Ns)
}

// Deadline returns ctx bounded by what remains of the opening command's maxTimeMS.
func (c *Cursor) Deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.TimeLeft == 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.TimeLeft)
}

// KeepTimeLeft records what a batch left of ctx's deadline for the next getMore; time
// between getMores does not count, as in MongoDB. An exhausted budget is kept as 1ns, so
// that the next getMore fails.
func (c *Cursor) KeepTimeLeft(ctx context.Context) {
	dl, ok := ctx.Deadline()
	if !ok || c.Tailable { // a tailable find's maxTimeMS bounds the find only
		return
	}
	c.TimeLeft = max(time.Until(dl), time.Nanosecond)
}

// KeepOpen reports whether a cursor whose batch reached the end of its stream (exhausted)
// stays open: a tailable cursor does, until its limit is reached.
func (c *Cursor) KeepOpen(exhausted bool) bool {
	return !exhausted || c.Tailable && !c.LimitHit && (c.Ended == nil || !c.Ended())
}

// FillAwait is FillBatch for an awaitData cursor: when the batch finds nothing, it waits for
// a write on its Waiter, up to wait, and tries again.
func (c *Cursor) FillAwait(ctx context.Context, dst []byte, n int64, wait time.Duration, mem *stream.Reservation) ([]byte, bool, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		wake := c.Waiter.Wait() // before reading: a write after the read wakes it
		start := len(dst)
		out, exhausted, err := c.FillBatch(ctx, dst, n, mem)
		if err != nil || len(out) > start || !exhausted || c.LimitHit || c.Ended != nil && c.Ended() {
			return out, exhausted, err
		}
		select {
		case <-wake:
		case <-timer.C:
			return out, exhausted, nil
		case <-ctx.Done():
			return out, exhausted, ctx.Err()
		}
	}
}
