// Package params holds the server parameters that change at runtime: the integer knobs
// setParameter sets (the memory bounds of blocking stages, the snapshot history window, the
// transaction lifetime), each validated as MongoDB's IDL parameters are, and the slow-operation
// settings the profile command changes. Each server has its own; the packages that obey a
// knob read it on each use (Knob.Load) or are told of each change (Knob.OnSet).
package params
