package pitr

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cleavedb/cleave/tools/conn"
)

// Point is where a replay stops: a cluster time ((seconds << 32) | increment), or a
// wall-clock time when Wall is not zero.
type Point struct {
	TS   uint64
	Wall time.Time
}

// tsPattern matches a cluster time as mongosh prints it, Timestamp(s, i), or as s:i.
var tsPattern = regexp.MustCompile(`^(?:Timestamp\(\s*(\d+)\s*,\s*(\d+)\s*\)|(\d+):(\d+))$`)

// ParsePoint reads a point: a cluster time, Timestamp(s, i) or s:i, or an RFC 3339 time.
func ParsePoint(s string) (Point, error) {
	if m := tsPattern.FindStringSubmatch(strings.TrimSpace(s)); m != nil {
		sec, err1 := strconv.ParseUint(m[1]+m[3], 10, 32)
		inc, err2 := strconv.ParseUint(m[2]+m[4], 10, 32)
		if err1 == nil && err2 == nil {
			return Point{TS: sec<<32 | inc}, nil
		}
	}
	w, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		return Point{}, fmt.Errorf("%q: want a cluster time, Timestamp(s, i) or s:i, or an RFC 3339 time such as 2024-05-01T08:00:00Z", s)
	}
	return Point{Wall: w}, nil
}

// String says the point as a user gave it.
func (p Point) String() string {
	if !p.Wall.IsZero() {
		return p.Wall.UTC().Format(time.RFC3339Nano)
	}
	return FormatTS(p.TS)
}

// before reports whether the point is before cluster time ts (the point's second before
// ts's for a wall-clock time).
func (p Point) before(ts uint64) bool {
	if !p.Wall.IsZero() {
		return p.Wall.Unix() < int64(ts>>32)
	}
	return p.TS < ts
}

// FormatTS writes a cluster time as mongosh prints it, Timestamp(s, i).
func FormatTS(ts uint64) string { return fmt.Sprintf("Timestamp(%d, %d)", ts>>32, uint32(ts)) }

// bsonTS is a cluster time as the driver holds it.
func bsonTS(ts uint64) bson.Timestamp { return bson.Timestamp{T: uint32(ts >> 32), I: uint32(ts)} }

// clusterTime is a driver's timestamp as a cluster time.
func clusterTime(t bson.Timestamp) uint64 { return uint64(t.T)<<32 | uint64(t.I) }

// Options say what to replay: the events of the change log of the server at SourceURI from
// From (the backup's cluster time: the first write it does not hold) up to and including
// Until, onto the server at TargetURI.
type Options struct {
	SourceURI, TargetURI string
	From                 uint64
	Until                Point
	// End is the latest cluster time the source's log holds every write of (a later
	// backup's); 0 for a live server, whose log holds every write up to now.
	End uint64
	// SourceName names the source in errors (a URI, a backup's directory).
	SourceName string
	// Progress, when set, is called after every event applied with their number so far.
	Progress func(events int64)
}

// Result is what a replay applied.
type Result struct {
	Events int64
	Last   uint64           // the last event's cluster time (0: none)
	Ops    map[string]int64 // events by operationType
}

// ErrHistoryLost is returned when the source's change log no longer reaches back to From.
var ErrHistoryLost = errors.New("the change log does not reach back to the backup's time")

// ErrOutsideLog is returned for a point the source's change log does not reach.
var ErrOutsideLog = errors.New("the point is outside the change log")

// changeStreamHistoryLost is MongoDB's code for a resume point the log no longer holds.
const changeStreamHistoryLost = 286

// Run connects to the source and the target and replays (Replay).
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Until.before(o.From) {
		return Result{}, fmt.Errorf("%w: %s is before the backup's cluster time %s: restore an earlier backup", ErrOutsideLog, o.Until, FormatTS(o.From))
	}
	src, err := conn.Connect(ctx, o.SourceURI)
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = src.Disconnect(context.WithoutCancel(ctx)) }()
	dst, err := conn.Connect(ctx, o.TargetURI)
	if err != nil {
		return Result{}, err
	}
	defer func() { _ = dst.Disconnect(context.WithoutCancel(ctx)) }()
	end, err := o.end(ctx, src)
	if err != nil {
		return Result{}, err
	}
	if !o.Until.before(end + 1) {
		return Result{}, fmt.Errorf("%w: %s is after what the change log of %s holds, the writes from %s to %s", ErrOutsideLog, o.Until, o.SourceName, FormatTS(o.From), FormatTS(end))
	}
	return Replay(ctx, src, dst, o)
}

// end returns the latest cluster time the source's log holds every write of.
func (o *Options) end(ctx context.Context, src *mongo.Client) (uint64, error) {
	if o.End != 0 {
		return o.End, nil
	}
	var reply struct {
		OperationTime bson.Timestamp `bson:"operationTime"`
	}
	if err := src.Database("admin").RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Decode(&reply); err != nil {
		return 0, fmt.Errorf("%s: %w", o.SourceName, err)
	}
	end := clusterTime(reply.OperationTime)
	if now := uint64(time.Now().Unix()) << 32; !o.Until.Wall.IsZero() && now > end {
		end = now // a live server's log holds every write up to now
	}
	return end, nil
}

// Replay applies the events of src's log after o.From up to o.Until onto dst.
func Replay(ctx context.Context, src, dst *mongo.Client, o Options) (Result, error) {
	res := Result{Ops: map[string]int64{}}
	from := bsonTS(o.From)
	cs, err := src.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().
		SetStartAtOperationTime(&from).SetShowExpandedEvents(true).SetBatchSize(1000))
	if err != nil {
		return res, o.startError(ctx, src, err)
	}
	defer func() { _ = cs.Close(context.WithoutCancel(ctx)) }()
	b := &batch{target: dst}
	for {
		if cs.TryNext(ctx) {
			ev, err := decodeEvent(cs.Current)
			if err != nil {
				return res, err
			}
			if o.after(ev) {
				return res, b.flush(ctx)
			}
			if err := b.apply(ctx, ev); err != nil {
				return res, err
			}
			res.Events++
			res.Ops[ev.Op]++
			res.Last = clusterTime(ev.ClusterTime)
			if o.Progress != nil {
				o.Progress(res.Events)
			}
			continue
		}
		if err := cs.Err(); err != nil {
			return res, o.startError(ctx, src, err)
		}
		if err := b.flush(ctx); err != nil {
			return res, err
		}
		if ts, ok := tokenTime(cs.ResumeToken()); ok && o.reached(ts) {
			return res, nil
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// after reports whether ev is past the point.
func (o *Options) after(ev *event) bool {
	if !o.Until.Wall.IsZero() {
		return ev.WallTime.After(o.Until.Wall)
	}
	return clusterTime(ev.ClusterTime) > o.Until.TS
}

// reached reports whether a stream that read every event up to ts has read every event up
// to the point.
func (o *Options) reached(ts uint64) bool {
	if !o.Until.Wall.IsZero() {
		// Cluster times count seconds of the wall clock: a time a second past the point's
		// is after every event whose wallTime is at or before it.
		return int64(ts>>32) > o.Until.Wall.Unix()+1
	}
	return ts >= o.Until.TS || o.End != 0 && ts >= o.End
}

// tokenTime reads the cluster time a resume token starts with (MongoDB's KeyString of a
// Timestamp: the type byte 0x82, then seconds and increment, big-endian), as cleave's
// tokens do too.
func tokenTime(tok bson.Raw) (uint64, bool) {
	data, ok := tok.Lookup("_data").StringValueOK()
	if !ok || len(data) < 18 {
		return 0, false
	}
	b, err := hex.DecodeString(data[:18])
	if err != nil || b[0] != 0x82 {
		return 0, false
	}
	return binary.BigEndian.Uint64(b[1:9]), true
}

// startError turns a stream's failure into the replay's: the log trimmed past From is
// ErrHistoryLost, naming where the log now begins.
func (o *Options) startError(ctx context.Context, src *mongo.Client, err error) error {
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != changeStreamHistoryLost {
		return fmt.Errorf("reading the change log of %s: %w", o.SourceName, err)
	}
	if oldest, ok := o.oldest(ctx, src); ok {
		return fmt.Errorf("%w: the change log of %s holds the writes from %s on, and a replay from the backup at %s needs them from then (keep a longer log with --change-retention and --change-retention-bytes, or restore a later backup)",
			ErrHistoryLost, o.SourceName, FormatTS(oldest), FormatTS(o.From))
	}
	return fmt.Errorf("%w: the change log of %s was trimmed past the backup's time %s (keep a longer log with --change-retention and --change-retention-bytes, or restore a later backup)",
		ErrHistoryLost, o.SourceName, FormatTS(o.From))
}

// oldest finds the earliest time a stream of the source can start at, by bisection between
// From and now: a stream opened at a time the log was trimmed past fails at once.
func (o *Options) oldest(ctx context.Context, src *mongo.Client) (uint64, bool) {
	lo := o.From // fails
	hi := uint64(time.Now().Add(time.Hour).Unix()) << 32
	if !opens(ctx, src, hi) {
		return 0, false
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if opens(ctx, src, mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}

// opens reports whether a stream of src opens at time ts.
func opens(ctx context.Context, src *mongo.Client, ts uint64) bool {
	at := bsonTS(ts)
	cs, err := src.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetStartAtOperationTime(&at))
	if err != nil {
		return false
	}
	_ = cs.Close(ctx)
	return true
}
