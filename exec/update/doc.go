// Package update applies MongoDB 7.0's update language to raw BSON documents: operator
// updates ($set, $unset, $inc, $mul, $min, $max, $rename, $currentDate, $setOnInsert, $push
// with $each/$slice/$sort/$position, $addToSet, $pop, $pull, $pullAll, $bit), the
// positional operators ("$", "$[]", "$[<id>]" with arrayFilters), replacement documents,
// and the document an upsert inserts. Pipeline updates are compiled by a hook the
// aggregation package provides. It is pure: no storage, no I/O, no logging.
//
// It owns MongoDB's update semantics and error vocabulary: every failure is a
// *mongoerr.Error with the server's code and, wherever clients may read it, its message
// ("Cannot create field 'b' in element {a: 5}").
//
// Invariants:
//
//   - Compile parses the update once into a tree of paths (MongoDB's UpdateNode tree), so
//     conflicting paths fail at compile time and Apply rewrites a document in one pass:
//     untouched fields are copied as raw bytes, only touched documents and arrays are
//     rebuilt. An Update is immutable and safe for concurrent use.
//   - Field order is MongoDB's: existing fields keep their place, created fields are
//     appended to their document in the order MongoDB 5.0+ applies paths (strings bytewise,
//     numeric components numerically), $rename to a new field appends it, _id comes first.
//   - Apply reports changed=false when MongoDB counts the document as not modified
//     (nModified 0): every operator was a no-op by MongoDB's rules, or the result is
//     byte-for-byte the input; a replacement is a no-op only when it equals the document.
//     The document is then appended unchanged.
//   - Comparisons of values ($min, $max, $addToSet, $pull, $pullAll, $push's $sort,
//     arrayFilters) order strings under Options.Collator, as MongoDB's nodes do once given
//     the operation's collation; field-name order above is always bytewise.
//   - For a valid input document, the output is valid BSON; invalid input fails with
//     InvalidBSON and never panics.
//
// Usage:
//
//	u, err := update.Compile(updateDoc, &update.Options{ArrayFilters: filters})
//	if err != nil {
//		return err // a *mongoerr.Error for the client
//	}
//	ok, pos := filter.MatchPos(doc) // only needed when u.NeedsPosition()
//	out, changed, err := u.Apply(buf[:0], doc, pos, false)
//
//	// No document matched an upsert:
//	newDoc, err := update.Upsert(nil, query, u) // then add an _id if it has none
package update
