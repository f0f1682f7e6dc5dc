// Package collation owns MongoDB's collation documents: parsing and validating them with
// MongoDB's errors (Parse), their full form as listCollections and listIndexes show it
// (Collation.Document: every field filled in from the locale's defaults, version "57.1"
// as MongoDB 7.0's ICU), and the comparison keys that make a collation work everywhere
// (Collation implements bsonx.Collator: bsonx.Collate turns values into values whose
// plain order is the collation's).
//
// Keys come from golang.org/x/text/collate (CLDR's tables, the same UCA ICU implements),
// with what x/text lacks added here:
//
//   - strength 1-3 through x/text's levels; 4 (quaternary) only differs with alternate
//     "shifted"; 5 (identical) appends the string's NFD bytes;
//   - caseLevel at strength 1 or 2: a level of case bits (one per cased letter, upper
//     after lower, or before with caseFirst "upper") after the levels compared; at
//     strength 3 and more the tertiary level already tells case apart;
//   - caseFirst "upper": the tertiary level is computed on the string with its case
//     swapped rune by rune (x/text sorts lowercase first, as ICU's "off" and "lower");
//   - numericOrdering through collate.Numeric; backwards through the "kb" key; alternate
//     "shifted" through "ka" (spaces and punctuation, maxVariable "punct").
//
// Refused with NotImplemented (238), never answered wrongly: maxVariable "space" with
// alternate "shifted" (x/text cannot move the variable top), and the "@collation=..."
// variants x/text has no table for. A locale MongoDB accepts is accepted; its tailoring is
// x/text's CLDR table when it has one, else the root order (as ICU's for the many
// languages CLDR does not tailor).
//
// Usage:
//
//	c, err := collation.Parse(cmd.Lookup("collation").Document()) // nil: the simple collation
//	key := bsonx.AppendKey(nil, bsonx.Collate(c.Collator(), v))
package collation
