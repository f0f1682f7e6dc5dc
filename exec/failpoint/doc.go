// Package failpoint holds the test failpoints of the server (enabled by --test-commands, as
// mongod's enableTestCommands): failCommand, the one the drivers' spec tests use, evaluated
// as mongod's CommandHelpers::evaluateFailCommandFailPoint does (it may block a command,
// close its connection, fail it with a code and labels, or add a writeConcernError to a
// write's reply), and the gates that hold a step of the server while they are on (a move
// before its flip, an index build once started, a multi-document write before its lock),
// and maxTimeAlwaysTimeOut (MaxTime), which expires every maxTimeMS from the start.
// The packages that pass a gate are given it as a plain function.
package failpoint
