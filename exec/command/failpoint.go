package command

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// This file implements configureFailPoint (a test command, enabled by Options.TestCommands
// as mongod's enableTestCommands) and the one failpoint the drivers' spec tests use,
// failCommand, as mongod's CommandHelpers::evaluateFailCommandFailPoint does:
//
//	{configureFailPoint: "failCommand", mode: {times: 1},
//	 data: {failCommands: ["insert"], errorCode: 91, errorLabels: [...]}}
//	→ {count: <times entered so far>, ok: 1}; the next insert answers
//	{ok: 0, errmsg: "Failing command via 'failCommand' failpoint", code: 91, ...}

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

// failPoints is the state of the failCommand failpoint. armed lets dispatch skip the mutex
// while it is off, which is always outside test suites.
type failPoints struct {
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

// failAction is what a fired failpoint leaves for the rest of the command: labels that
// replace the error labels of whatever error the command answers.
type failAction struct {
	labels    []string
	hasLabels bool
}

// addTestCommands registers the commands enabled by Options.TestCommands.
func (e *Server) addTestCommands(add func(*Command)) {
	add(&Command{Name: "configureFailPoint", Run: e.configureFailPoint, Action: auth.ActionClusterAdmin, Help: "modifies the settings of a fail point", AdminOnly: true})
	addAPITestCommands(add)
}

// configureFailPoint sets the mode and data of a failpoint and answers how many times it
// had fired.
func (e *Server) configureFailPoint(_ context.Context, r *Request) error {
	first, _ := bsonx.FirstElement(r.Body)
	name, _ := first.Value().StringValueOK()
	switch name {
	case "simulateAvailableDiskSpace":
		return e.simulateAvailableDiskSpace(r)
	case "pauseCatalogWatch":
		return e.pauseCatalogWatch(r)
	case "pauseMoveBeforeFlip":
		return e.pauseGate(r, &e.BeforeFlip)
	case "hangAfterStartingIndexBuild":
		return e.pauseGate(r, &e.AfterBuildStart)
	case "pauseMultiWriteBeforeLock":
		return e.pauseGate(r, &e.BeforeGroupLock)
	}
	if name != "failCommand" {
		return mongoerr.New(mongoerr.FailPointSetFailed, "%s not found", name)
	}
	mode, n, p, err := parseFailPointMode(r.Body.Lookup("mode"))
	if err != nil {
		return err
	}
	var data failCommandData
	if v, err := r.Body.LookupErr("data"); err == nil {
		if v.Type != bsoncore.TypeEmbeddedDocument && v.Type != bsoncore.TypeArray {
			return mongoerr.New(mongoerr.TypeMismatch, "the 'data' option must be a JSON object")
		}
		// A private copy: the body aliases the connection's read buffer, reused by its next
		// request, while the failpoint outlives this one.
		data = parseFailCommandData(append(bsoncore.Document(nil), v.Data...))
	}
	fp := &e.Fail
	fp.mu.Lock()
	count := fp.mu.entered
	fp.mu.mode, fp.mu.n, fp.mu.p, fp.mu.data = mode, n, p, data
	fp.armed.Store(mode != fpOff)
	fp.mu.Unlock()
	r.Conn.Log.Warn("set failpoint", zap.String("failpoint", name), zap.Stringer("mode", r.Body.Lookup("mode")))
	r.Out = bsonx.AppendNumber(r.Out, "count", count)
	return nil
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

// matches reports whether the failpoint applies to command cmd of request r
// (mongod's shouldActivateFailCommandFailPoint). configureFailPoint is never failed.
func (fd *failCommandData) matches(e *Server, r *Request, cmd *Command) bool {
	if r.Name == "configureFailPoint" {
		return false
	}
	if fd.hasAppName && r.Conn.appName != fd.appName {
		return false
	}
	if fd.hasNamespace && requestNamespace(r) != fd.namespace {
		return false
	}
	if fd.failAll {
		return true
	}
	for _, name := range fd.commands {
		if e.Commands.Get(name) == cmd { // aliases share an entry, as mongod's hasAlias
			return true
		}
	}
	return false
}

// requestNamespace is the namespace a command names: "db.coll" when its first field is a
// collection name, else the database.
func requestNamespace(r *Request) string {
	first, _ := bsonx.FirstElement(r.Body)
	if coll, ok := first.Value().StringValueOK(); ok && coll != "" {
		return r.DB + "." + coll
	}
	return r.DB
}

// fire decides under the lock whether an armed failpoint whose predicate holds fires now
// (mongod's FailPoint::_evaluateByMode), and counts it if so.
func (fp *failPoints) fire() bool {
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

// evalFailCommand runs the failCommand failpoint before command cmd: it may block, close
// the connection (errCloseConnection) or fail the command with the configured error.
func (e *Server) evalFailCommand(ctx context.Context, r *Request, cmd *Command) (failAction, error) {
	fp := &e.Fail
	if !fp.armed.Load() {
		return failAction{}, nil
	}
	fp.mu.Lock()
	fd := fp.mu.data
	active := fp.mu.mode != fpOff && fd.matches(e, r, cmd) &&
		(fd.closeConnection || fd.blockConnection || fd.hasErrorCode) && fp.fire()
	fp.mu.Unlock()
	if !active {
		return failAction{}, nil
	}
	act := failAction{labels: fd.labels, hasLabels: fd.hasLabels}
	r.Conn.Log.Info("activating 'failCommand' failpoint", zap.String("cmd", r.Name))
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

// finishFailCommand completes a command the failpoint may have affected: it labels its
// error, or adds the configured writeConcernError to a write's reply (mongod evaluates the
// failpoint a second time for that, after the command ran).
func (e *Server) finishFailCommand(r *Request, cmd *Command, act failAction, err error) error {
	if err != nil {
		return labelError(r, act, err)
	}
	if !e.Fail.armed.Load() || !r.Cmd.Has(WriteConcern) {
		return nil
	}
	fp := &e.Fail
	fp.mu.Lock()
	fd := fp.mu.data
	active := fp.mu.mode != fpOff && fd.wce != nil && fd.matches(e, r, cmd) && fp.fire()
	fp.mu.Unlock()
	if !active {
		return nil
	}
	r.Out = bsoncore.AppendDocumentElement(r.Out, "writeConcernError", fd.wce)
	labels := fd.labels
	if !fd.hasLabels {
		code, _ := fd.wce.Lookup("code").AsInt64OK()
		labels = errorLabels(r, 0, mongoerr.Code(code))
	}
	if len(labels) > 0 {
		r.Out = bsonx.AppendStringArray(r.Out, "errorLabels", labels)
	}
	return nil
}

// labelError gives a failed command's error the failpoint's errorLabels, or the label
// mongod adds itself (errorLabels).
func labelError(r *Request, act failAction, err error) error {
	me := mongoerr.As(err)
	if me == nil {
		return err
	}
	labels := act.labels
	if !act.hasLabels {
		labels = errorLabels(r, me.Code, 0)
	}
	if len(labels) == 0 {
		return err
	}
	labeled := *me
	labeled.Labels = append([]string(nil), labels...)
	return &labeled
}

// retryableCodes are the codes of the retryable writes specification: network, "not
// primary" and shutdown errors.
var retryableCodes = map[mongoerr.Code]bool{
	mongoerr.HostUnreachable: true, mongoerr.HostNotFound: true, mongoerr.NetworkTimeout: true,
	mongoerr.ShutdownInProgress: true, mongoerr.PrimarySteppedDown: true, mongoerr.ExceededTimeLimit: true,
	mongoerr.SocketException: true, mongoerr.NotWritablePrimary: true, mongoerr.InterruptedAtShutdown: true,
	mongoerr.InterruptedDueToReplStateChange: true, mongoerr.NotPrimaryNoSecondaryOk: true,
	mongoerr.NotPrimaryOrSecondary: true,
}

// noteClientMetadata keeps the application name of a handshake's client metadata
// ({client: {application: {name}}}) for failCommand's appName; as in mongod, only the
// first handshake of a connection sets it.
func noteClientMetadata(r *Request) {
	if r.Conn.appName != "" {
		return
	}
	switch r.Name {
	case "hello", "isMaster", "ismaster":
	default:
		return
	}
	if name, ok := r.Body.Lookup("client", "application", "name").StringValueOK(); ok {
		r.Conn.ops.mu.Lock() // $currentOp on another connection reads it under this lock
		r.Conn.appName = name
		r.Conn.ops.mu.Unlock()
	}
}

// ttlMonitorCommand is the test-only command {cleaveTTLMonitor: 1, intervalMS: n}: it sets
// the monitor's interval (when given), runs a pass now and waits for it, and answers the
// number of passes done.
func (e *Server) TtlMonitorCommand(ctx context.Context, r *Request) error {
	const cmd = "cleaveTTLMonitor"
	var interval time.Duration
	err := args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		if key != "intervalMS" {
			return false, nil
		}
		n, err := args.Int64(cmd, key, v)
		if err == nil && n > 0 {
			interval = time.Duration(n) * time.Millisecond
		}
		return true, err
	})
	if err != nil {
		return err
	}
	r.Out = bsoncore.AppendInt64Element(r.Out, "passes", e.DDL.TTLPassNow(ctx, interval))
	return nil
}

// Entered is how many times failCommand fired since the server started.
func (f *failPoints) Entered() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.entered
}
