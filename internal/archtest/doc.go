// Package archtest holds the tests that keep the shape of the code, so that it is checked by
// `go test` and CI rather than remembered:
//
//   - layout_test.go: every package of the module has a rule, the allow-list of the packages
//     of ours it may import directly, with the reason; an import outside it fails with the
//     import chain that brings it in. Whole-tree invariants (only cmd/ imports exec; the leaves
//     import nothing of ours; the layers below execution never reach it) are checked on top.
//   - depguard_test.go: the depguard rules of .golangci.yml, which flag a bad import in the
//     editor, name files that exist and deny nothing the allow-lists permit.
//   - size_test.go: how many files a package, how many lines a file and a function may have,
//     in this module and in compat/, with the exceptions listed by name and reason.
//   - root_test.go: the composition root (exec) stays one: at most 15 source files and 60
//     methods on its Executor.
//
// The package has no code of its own. It reads the sources (go/build, go/parser) and imports
// none of them, so it does not move when the packages it judges are reorganized.
package archtest
