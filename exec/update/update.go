package update

import (
	"bytes"
	"sort"
	"strings"
	"time"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Options configures Compile. The zero value is usable.
type Options struct {
	// ArrayFilters are the update's arrayFilters, one filter per identifier.
	ArrayFilters []bsoncore.Document
	// Now is the clock of $currentDate's dates. Default: time.Now.
	Now func() time.Time
	// Timestamp returns the next cluster timestamp (seconds, increment), for $currentDate
	// with {$type: "timestamp"} and for zero timestamps in replacement documents, which
	// MongoDB fills in. Default: Now's seconds with increment 1; the executor should pass
	// its logical clock so that timestamps are unique.
	Timestamp func() (t, i uint32)
	// CompilePipeline compiles a pipeline-style update ({u: [...]}); it comes from the
	// aggregation package. Nil: pipeline updates are refused.
	CompilePipeline func(pipeline bsoncore.Array) (Pipeline, error)
	// KeepEmptyTimestamps keeps the zero timestamps of a replacement document as they are
	// (the command's bypassEmptyTsReplacement).
	KeepEmptyTimestamps bool
	// Collator is the operation's collation (else the collection's): the comparisons of
	// $min, $max, $addToSet, $pull, $pullAll, $push's $sort and arrayFilters order strings
	// by it, as MongoDB's update nodes do after setCollator. Nil: the simple collation.
	Collator bsonx.Collator
}

// EnsureDefaults returns o with the defaults filled in (a new value; o may be nil).
func (o *Options) EnsureDefaults() *Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.Timestamp == nil {
		now := r.Now
		r.Timestamp = func() (uint32, uint32) { return uint32(now().Unix()), 1 }
	}
	return &r
}

// Validate checks that the array filters are valid BSON documents; Compile reports MongoDB's
// errors for their content.
func (o *Options) Validate() error {
	for _, f := range o.ArrayFilters {
		if err := f.Validate(); err != nil {
			return errInvalidBSON("arrayFilters")
		}
	}
	return nil
}

// Pipeline is a compiled aggregation-pipeline update.
type Pipeline interface {
	// Apply appends to dst the document the pipeline makes of doc.
	Apply(dst []byte, doc bsoncore.Document) ([]byte, error)
}

// updateKind tells the three forms of update apart.
type updateKind uint8

const (
	kindModifier updateKind = iota + 1
	kindReplacement
	kindPipeline
)

// Update is a compiled update: operators ({$set: ...}), a replacement document, or a
// pipeline. It is immutable and safe for concurrent use.
type Update struct {
	kind        updateKind
	root        *node             // kindModifier
	positional  bool              // some path holds "$"
	replacement bsoncore.Document // kindReplacement, zero timestamps filled in
	replID      elem              // the replacement's _id, if any
	replHasID   bool
	replErr     error    // storage validation of the replacement, reported by Apply
	pipeline    Pipeline // kindPipeline
	paths       []string // ModifiedPaths
	now         func() time.Time
	timestamp   func() (uint32, uint32)
	keepEmptyTs bool              // Options.KeepEmptyTimestamps
	src         bsoncore.Document // owned copy of the update; leaves point into it

	// rootNode and path1 hold root and the paths of one path ({$set: {f: v}}, the usual
	// update) in the Update's own allocation: two allocations fewer per compiled update.
	rootNode node
	path1    [1]string
}

// IsReplacement reports whether the update is a replacement document.
func (u *Update) IsReplacement() bool { return u.kind == kindReplacement }

// IsPipeline reports whether the update is an aggregation pipeline.
func (u *Update) IsPipeline() bool { return u.kind == kindPipeline }

// NeedsPosition reports whether the update uses the positional "$" operator, so that the
// caller must pass the query's match position to Apply.
func (u *Update) NeedsPosition() bool { return u.positional }

// ModifiedPaths returns the dotted paths an operator update may change, sorted, with paths
// under another one dropped ("a" covers "a.b"). A path stops before its first dynamic
// component: "a.$.b" and "a.$[i].b" report "a". $rename reports its source and its
// destination. Numeric components are kept as written and may name array elements. It
// returns nil for replacement and pipeline updates, which may change anything.
func (u *Update) ModifiedPaths() []string { return u.paths }

// Compile parses an update document: operators ({$set: {...}, $inc: {...}}) or, when its
// first field does not start with '$', a replacement document. Errors are *mongoerr.Error
// with MongoDB's codes and messages.
func Compile(update bsoncore.Document, opts *Options) (*Update, error) {
	opts = opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if err := update.Validate(); err != nil {
		return nil, errInvalidBSON("update")
	}
	filters, err := parseArrayFilters(opts.ArrayFilters, opts.Collator)
	if err != nil {
		return nil, err
	}
	u := &Update{now: opts.Now, timestamp: opts.Timestamp, keepEmptyTs: opts.KeepEmptyTimestamps, src: bytes.Clone(update)}
	body, _ := docBody(u.src)
	if first, _, ok := readElem(body); !ok || len(first.key) == 0 || first.key[0] != '$' {
		u.kind = kindReplacement
		u.compileReplacement()
		return u, nil
	}
	u.kind = kindModifier
	u.rootNode.kind = kindObject
	c := &compiler{root: &u.rootNode, filters: filters, coll: opts.Collator}
	if err := c.parseModifiers(body); err != nil {
		return nil, err
	}
	if err := c.checkFiltersUsed(u.src); err != nil {
		return nil, err
	}
	c.root.finish(filters)
	u.root, u.positional, u.paths = c.root, c.positional, c.modifiedPaths(&u.path1)
	return u, nil
}

// CompilePipeline compiles a pipeline-style update with opts.CompilePipeline.
func CompilePipeline(pipeline bsoncore.Array, opts *Options) (*Update, error) {
	opts = opts.EnsureDefaults()
	if len(opts.ArrayFilters) > 0 {
		return nil, errf(mongoerr.FailedToParse, "Cannot specify arrayFilters and a pipeline update")
	}
	if opts.CompilePipeline == nil {
		return nil, errf(mongoerr.NotImplemented, "pipeline-style updates are not supported")
	}
	p, err := opts.CompilePipeline(pipeline)
	if err != nil {
		return nil, err
	}
	return &Update{kind: kindPipeline, pipeline: p, now: opts.Now, timestamp: opts.Timestamp}, nil
}

// CompileValue compiles the update argument of an update statement or findAndModify: a
// document (Compile) or an array (CompilePipeline).
func CompileValue(v bsoncore.Value, opts *Options) (*Update, error) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		return Compile(v.Data, opts)
	case bsoncore.TypeArray:
		return CompilePipeline(v.Data, opts)
	}
	return nil, errf(mongoerr.FailedToParse, "Update argument must be either an object or an array")
}

// compiler builds the update tree.
type compiler struct {
	root       *node
	filters    map[string]*arrayFilter
	coll       bsonx.Collator // Options.Collator
	positional bool
	paths      [][]string
}

// parseModifiers parses the operators of an update document (UpdateDriver::parse).
func (c *compiler) parseModifiers(body []byte) error {
	if _, ok := findField(body, "$v"); ok {
		return errf(mongoerr.FailedToParse, "The $v update field is only recognized internally")
	}
	for len(body) > 0 {
		mod, rest, ok := readElem(body)
		if !ok {
			return errInvalidBSON("update")
		}
		body = rest
		op, known := operators[string(mod.key)]
		if !known {
			return errf(mongoerr.FailedToParse, "Unknown modifier: %s. Expected a valid update modifier or "+
				"pipeline-style update specified as an array", mod.key)
		}
		if mod.t != bsoncore.TypeEmbeddedDocument {
			return errf(mongoerr.FailedToParse, "Modifiers operate on fields but we found type %s instead. "+
				"For example: {$mod: {<field>: ...}} not {%s}", bsonx.TypeName(mod.t), bsonx.ShellElement(mod.key, mod.t, mod.val))
		}
		// An empty operator ({$set: {}}) changes nothing, as in MongoDB 5.0+ (4.4 refused it
		// with FailedToParse): Mongoose's save() sends {$set: {}, $unset: {...}}.
		fields, _ := docBody(mod.val)
		for len(fields) > 0 {
			f, rest, ok := readElem(fields)
			if !ok {
				return errInvalidBSON("update")
			}
			fields = rest
			if err := c.parseField(op, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// parseField adds one {<path>: <argument>} of an operator to the tree
// (UpdateObjectNode::parseAndMerge).
func (c *compiler) parseField(op opKind, f elem) error {
	key := string(f.key)
	path := key
	if op == opRename {
		if err := c.addPath(path, func() (*leaf, error) {
			return &leaf{op: opRenameSource, path: path, key: path}, nil
		}); err != nil {
			return err
		}
		if f.t != bsoncore.TypeString {
			return errf(mongoerr.BadValue, "The 'to' field for $rename must be a string: %s", bsonx.ShellElement(f.key, f.t, f.val))
		}
		path = string(strValue(f.val))
	}
	return c.addPath(path, func() (*leaf, error) { return newLeaf(op, key, f, c.coll) })
}

// addPath checks a path, builds its leaf and inserts it.
func (c *compiler) addPath(path string, mk func() (*leaf, error)) error {
	parts, err := splitPath(path)
	if err != nil {
		return err
	}
	positional, err := checkPositional(parts, path)
	if err != nil {
		return err
	}
	lf, err := mk()
	if err != nil {
		return err
	}
	if err := c.insert(parts, path, lf); err != nil {
		return err
	}
	c.positional = c.positional || positional
	c.paths = append(c.paths, parts)
	return nil
}

// checkFiltersUsed fails when an array filter's identifier appears in no path.
func (c *compiler) checkFiltersUsed(update []byte) error {
	ids := make([]string, 0, len(c.filters))
	for id, f := range c.filters {
		if !f.used {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	sort.Strings(ids)
	return errf(mongoerr.FailedToParse, "The array filter for identifier '%s' was not used in the update %s",
		ids[0], bsonx.ShellDoc(update))
}

// modifiedPaths returns ModifiedPaths from the parsed paths; one path goes in one.
func (c *compiler) modifiedPaths(one *[1]string) []string {
	if len(c.paths) == 1 { // nothing to sort or cover ({$set: {f: v}})
		one[0] = staticPrefix(c.paths[0])
		return one[:]
	}
	paths := make([]string, 0, len(c.paths))
	for _, parts := range c.paths {
		paths = append(paths, staticPrefix(parts))
	}
	sort.Strings(paths)
	out := make([]string, 0, len(paths))
	for i, p := range paths {
		covered := false
		for j, q := range paths {
			if j != i && (q == p && j < i || strings.HasPrefix(p, q+".")) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, p)
		}
	}
	return out
}

// staticPrefix is the dotted path of parts up to its first dynamic component.
func staticPrefix(parts []string) string {
	n := 0
	for n < len(parts) && !isDynamic(parts[n]) {
		n++
	}
	return strings.Join(parts[:n], ".")
}
