// Package text is text search as MongoDB's text indexes (version 3) do it: the analysis of
// strings into terms, the scores of a document's terms, and $text queries. It knows no
// collections: exec/catalog keys text indexes with it and exec/query plans $text with it.
//
// Analysis comes from github.com/blevesearch/bleve/v2, never written here: its Unicode word
// segmentation splits a string into words, its lowercase filter folds case and its ASCII
// folding drops diacritics, its per-language lists give the stop words (checked on the
// fully folded word) and its Snowball stemmers (the light one for Portuguese) stem what
// remains. MongoDB's languages are accepted by name or ISO code, in any case; "none" has
// neither stop words nor stemming. (bleve is the maintained Go home of those analyzers and
// stemmers; the standard library has none.)
//
// Invariants:
//   - an index entry's term is Terms(lang, s, Fold{}) of one of the document's strings, so
//     a query's Bounds (the same analysis of its positive words) find exactly the
//     documents holding one of them;
//   - Scores is MongoDB's FTSSpec::scoreDocument (fts_spec.cpp): per string, the k-th
//     occurrence of a term adds 1/2^(k-1) to its frequency; the string adds
//     weight × frequency × (0.5 × count/terms + 0.5) × (1.1 if the string is the term);
//   - a document's score for a query is the sum of the scores of its terms among the
//     query's Bounds, as MongoDB's TEXT_OR sums its index entries' scores.
//
// Usage:
//
//	spec, _ := text.ParseSpec(indexSpec)           // {key: {_fts: "text", _ftsx: 1}, weights: {...}}
//	scores, _ := spec.Scores(doc)                   // term → score: the index's entries
//	args, _ := text.ParseArgs(filter.Lookup("$text"))
//	q, _ := text.Compile(spec, args)                // q.Bounds: the terms to scan
//	ok, score, _ := q.Match(doc)                    // phrases, negations, sensitivity
package text
