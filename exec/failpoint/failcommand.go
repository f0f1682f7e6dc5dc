package failpoint

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"
)

// ErrCloseConnection asks the wire layer to close the client's socket without a reply
// (failCommand's closeConnection). Handle returns it as its error.
var ErrCloseConnection = errors.New("closing connection via 'failCommand' failpoint")

// failCommandMsg is the errmsg of the errors failCommand injects.
const failCommandMsg = "Failing command via 'failCommand' failpoint"

// fpMode is how often an armed failpoint fires (mongod's FailPoint::Mode).
type fpMode uint8

const (
	fpOff      fpMode = iota
	fpAlwaysOn        // every time
	fpTimes           // the next n times, then off
	fpSkip            // not the next n times, then always
	fpRandom          // with probability p
)

// FailCommand is the state of the failCommand failpoint. armed lets dispatch skip the mutex
// while it is off, which is always outside test suites.
type FailCommand struct {
	armed atomic.Bool
	mu    struct {
		sync.Mutex
		mode    fpMode
		n       int64   // times left (fpTimes) or skips left (fpSkip)
		p       float64 // activation probability (fpRandom)
		data    failCommandData
		entered int64 // times the failpoint fired since the server started
	}
}

// failCommandData is failCommand's data document, parsed. Fields of the wrong type count
// as absent, as mongod's bsonExtract* calls make them.
type failCommandData struct {
	commands        []string
	failAll         bool
	errorCode       int32
	hasErrorCode    bool
	closeConnection bool
	blockConnection bool
	blockTime       bsoncore.Value // blockTimeMS as sent; checked when the failpoint fires
	labels          []string
	hasLabels       bool              // errorLabels is an array: it replaces mongod's own labels
	wce             bsoncore.Document // writeConcernError, nil when absent
	appName         string
	hasAppName      bool
	namespace       string
	hasNamespace    bool
}

// Action is what a fired failpoint leaves for the rest of the command: labels that
// replace the error labels of whatever error the command answers.
type Action struct {
	// Labels replace the command's error labels when HasLabels.
	Labels    []string
	HasLabels bool
}

// parseFailPointMode parses mode: "off", "alwaysOn", {times: n}, {skip: n} or
// {activationProbability: p} (mongod's FailPoint::parseBSON).
func parseFailPointMode(v bsoncore.Value) (fpMode, int64, float64, error) {
	switch v.Type {
	case 0:
		return 0, 0, 0, mongoerr.New(mongoerr.IllegalOperation, "When setting a failpoint, you must supply a 'mode'")
	case bsoncore.TypeString:
		switch s := v.StringValue(); s {
		case "off":
			return fpOff, 0, 0, nil
		case "alwaysOn":
			return fpAlwaysOn, 0, 0, nil
		default:
			return 0, 0, 0, mongoerr.New(mongoerr.BadValue, "unknown mode: %s", s)
		}
	case bsoncore.TypeEmbeddedDocument:
	default:
		return 0, 0, 0, mongoerr.New(mongoerr.TypeMismatch, "'mode' must be a string or JSON object")
	}
	d := v.Document()
	for _, opt := range []struct {
		key  string
		mode fpMode
	}{{"times", fpTimes}, {"skip", fpSkip}} {
		x, err := d.LookupErr(opt.key)
		if err != nil {
			continue
		}
		n, err := extractInteger(opt.key, x)
		if err != nil {
			return 0, 0, 0, err
		}
		if n < 0 {
			return 0, 0, 0, mongoerr.New(mongoerr.BadValue, "'%s' option to 'mode' must be positive", opt.key)
		}
		if n > math.MaxInt32 {
			return 0, 0, 0, mongoerr.New(mongoerr.BadValue, "'%s' option to 'mode' is too large", opt.key)
		}
		return opt.mode, n, 0, nil
	}
	if x, err := d.LookupErr("activationProbability"); err == nil {
		p, ok := bsonx.NumberAsFloat64(x)
		if !ok {
			return 0, 0, 0, mongoerr.New(mongoerr.TypeMismatch,
				"the 'activationProbability' option to 'mode' must be a double between 0 and 1")
		}
		if p < 0 || p > 1 || math.IsNaN(p) {
			return 0, 0, 0, mongoerr.New(mongoerr.BadValue, "activationProbability must be between 0.0 and 1.0; found %v", p)
		}
		return fpRandom, 0, p, nil
	}
	return 0, 0, 0, mongoerr.New(mongoerr.BadValue,
		"'mode' must be one of 'off', 'alwaysOn', '{times:n}', '{skip:n}' or '{activationProbability:p}'")
}

// extractInteger is mongod's bsonExtractIntegerField: a number holding a whole value.
func extractInteger(key string, v bsoncore.Value) (int64, error) {
	f, ok := bsonx.NumberAsFloat64(v)
	if !ok {
		return 0, mongoerr.New(mongoerr.TypeMismatch, "Expected field \"%s\" to have numeric type, but found %s",
			key, bsonx.TypeName(v.Type))
	}
	switch v.Type {
	case bsoncore.TypeInt32:
		return int64(v.Int32()), nil
	case bsoncore.TypeInt64:
		return v.Int64(), nil
	}
	if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, mongoerr.New(mongoerr.BadValue,
			"Expected field \"%s\" to have a value exactly representable as a 64-bit integer, but found %s: %s",
			key, key, bsonx.ShellString(v))
	}
	return int64(f), nil
}

// parseFailCommandData reads the fields of failCommand's data that cleave implements;
// failInternalCommands and threadName are accepted and ignored (no client is internal).
func parseFailCommandData(d bsoncore.Document) failCommandData {
	var fd failCommandData
	if a, ok := d.Lookup("failCommands").ArrayOK(); ok {
		vals, _ := a.Values()
		for _, v := range vals {
			if s, ok := v.StringValueOK(); ok {
				fd.commands = append(fd.commands, s)
			}
		}
	}
	_, err := d.LookupErr("failAllCommands")
	fd.failAll = err == nil
	if v, err := d.LookupErr("errorCode"); err == nil {
		if n, err := extractInteger("errorCode", v); err == nil {
			fd.errorCode, fd.hasErrorCode = int32(n), true
		}
	}
	fd.closeConnection, _ = d.Lookup("closeConnection").BooleanOK()
	fd.blockConnection, _ = d.Lookup("blockConnection").BooleanOK()
	fd.blockTime = d.Lookup("blockTimeMS")
	if a, ok := d.Lookup("errorLabels").ArrayOK(); ok {
		fd.hasLabels = true
		vals, _ := a.Values()
		for _, v := range vals {
			if s, ok := v.StringValueOK(); ok {
				fd.labels = append(fd.labels, s)
			}
		}
	}
	if w, ok := d.Lookup("writeConcernError").DocumentOK(); ok {
		fd.wce = append(bsoncore.Document(nil), w...)
	}
	if v, err := d.LookupErr("appName"); err == nil {
		fd.appName, _ = v.StringValueOK()
		fd.hasAppName = true
	}
	if v, err := d.LookupErr("namespace"); err == nil {
		fd.namespace, _ = v.StringValueOK()
		fd.hasNamespace = true
	}
	return fd
}

// fire decides under the lock whether an armed failpoint whose predicate holds fires now
// (mongod's FailPoint::_evaluateByMode), and counts it if so.
func (fp *FailCommand) fire() bool {
	m := &fp.mu
	on := false
	switch m.mode {
	case fpAlwaysOn:
		on = true
	case fpTimes:
		m.n--
		if m.n <= 0 {
			m.mode = fpOff
			fp.armed.Store(false)
		}
		on = true
	case fpSkip:
		if m.n <= 0 {
			on = true
		} else {
			m.n--
		}
	case fpRandom:
		on = rand.Float64() < m.p
	}
	if on {
		m.entered++
	}
	return on
}

// blockFor sleeps blockTimeMS (blockConnection), or until the request is cancelled.
func blockFor(ctx context.Context, v bsoncore.Value) error {
	ms, err := extractInteger("blockTimeMS", v)
	if v.Type == 0 || err != nil {
		return mongoerr.New(mongoerr.InvalidOptions, "must specify 'blockTimeMS' when 'blockConnection' is true")
	}
	if ms < 0 {
		return mongoerr.New(mongoerr.InvalidOptions, "'blockTimeMS' must be non-negative")
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Entered is how many times failCommand fired since the server started.
func (fp *FailCommand) Entered() int64 {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	return fp.mu.entered
}

// ConfigureAll is Configure for a failpoint that applies to every command it is evaluated
// for, whatever its data's failCommands (failGetMoreAfterCursorCheckout: evaluated by getMore
// only, once it has checked its cursor out).
func (fp *FailCommand) ConfigureAll(modeV, dataV bsoncore.Value) (int64, error) {
	n, err := fp.Configure(modeV, dataV)
	if err == nil {
		fp.mu.Lock()
		fp.mu.data.failAll = true
		fp.mu.Unlock()
	}
	return n, err
}

// Configure sets the failpoint's mode ("off", "alwaysOn", {times: n}, {skip: n} or
// {activationProbability: p}) and data (data's Type 0: none), and returns how many times it
// had fired.
func (fp *FailCommand) Configure(modeV, dataV bsoncore.Value) (int64, error) {
	mode, n, p, err := parseFailPointMode(modeV)
	if err != nil {
		return 0, err
	}
	var data failCommandData
	if dataV.Type != 0 {
		if dataV.Type != bsoncore.TypeEmbeddedDocument && dataV.Type != bsoncore.TypeArray {
			return 0, mongoerr.New(mongoerr.TypeMismatch, "the 'data' option must be a JSON object")
		}
		// A private copy: the body aliases the connection's read buffer, reused by its next
		// request, while the failpoint outlives this one.
		data = parseFailCommandData(append(bsoncore.Document(nil), dataV.Data...))
	}
	fp.mu.Lock()
	count := fp.mu.entered
	fp.mu.mode, fp.mu.n, fp.mu.p, fp.mu.data = mode, n, p, data
	fp.armed.Store(mode != fpOff)
	fp.mu.Unlock()
	return count, nil
}

// Armed reports whether the failpoint is on; off, which it always is outside test suites,
// nothing else needs its mutex.
func (fp *FailCommand) Armed() bool { return fp.armed.Load() }

// Op is a command as the failpoint matches it.
type Op struct {
	Name string // as spelled
	// Names reports whether the command is the one a spelling names (aliases share an entry,
	// as mongod's hasAlias).
	Names     func(spelling string) bool
	AppName   string // the connection's client metadata application name
	Namespace string // "db.coll", or the database for a command without a collection
}

// matches reports whether the failpoint applies to op (mongod's
// shouldActivateFailCommandFailPoint). configureFailPoint is never failed.
func (fd *failCommandData) matches(op *Op) bool {
	if op.Name == "configureFailPoint" {
		return false
	}
	if fd.hasAppName && op.AppName != fd.appName {
		return false
	}
	if fd.hasNamespace && op.Namespace != fd.namespace {
		return false
	}
	if fd.failAll {
		return true
	}
	for _, name := range fd.commands {
		if op.Names(name) {
			return true
		}
	}
	return false
}

// Eval runs the failpoint before op: it may block, close the connection
// (ErrCloseConnection) or fail the command with the configured error; the action's labels
// apply to whatever error the command then answers.
func (fp *FailCommand) Eval(ctx context.Context, op *Op, log *zap.Logger) (Action, error) {
	if !fp.armed.Load() {
		return Action{}, nil
	}
	fp.mu.Lock()
	fd := fp.mu.data
	active := fp.mu.mode != fpOff && fd.matches(op) &&
		(fd.closeConnection || fd.blockConnection || fd.hasErrorCode) && fp.fire()
	fp.mu.Unlock()
	if !active {
		return Action{}, nil
	}
	act := Action{Labels: fd.labels, HasLabels: fd.hasLabels}
	log.Info("activating 'failCommand' failpoint", zap.String("cmd", op.Name))
	if fd.blockConnection {
		if err := blockFor(ctx, fd.blockTime); err != nil {
			return act, err
		}
	}
	if fd.closeConnection {
		return act, ErrCloseConnection
	}
	if fd.hasErrorCode && fd.errorCode != 0 { // mongod raises Status(errorCode): 0 is OK
		return act, mongoerr.New(mongoerr.Code(fd.errorCode), failCommandMsg)
	}
	return act, nil
}

// WriteConcernError evaluates the failpoint after op (a command that takes a write
// concern) succeeded, as mongod does a second time for that: the writeConcernError to add to
// its reply (nil: none) and the labels that go with it.
func (fp *FailCommand) WriteConcernError(op *Op) (wce bsoncore.Document, act Action) {
	if !fp.armed.Load() {
		return nil, Action{}
	}
	fp.mu.Lock()
	fd := fp.mu.data
	active := fp.mu.mode != fpOff && fd.wce != nil && fd.matches(op) && fp.fire()
	fp.mu.Unlock()
	if !active {
		return nil, Action{}
	}
	return fd.wce, Action{Labels: fd.labels, HasLabels: fd.hasLabels}
}

// ModeOn parses a failpoint's mode and reports whether it turns the failpoint on: the
// gates and the simulations are on or off, whatever their count.
func ModeOn(v bsoncore.Value) (bool, error) {
	mode, _, _, err := parseFailPointMode(v)
	return mode != fpOff, err
}
