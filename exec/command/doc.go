// Package command is the kit every family of commands shares: the Request a handler runs
// (its body, where its reply is built, what it cost, its transaction or snapshot, the
// generic arguments found in one pass), the connection state commands see (Conn), the
// command table (Command: every property of a command, aliases included, is a field of its
// entry), and the Server: the services commands run on, built and wired once (the catalog,
// the read and write paths, the partition manager, DDL, cursors, sessions, transactions,
// access control, parameters, failpoints, the router to other nodes).
//
// The families live in packages of their own above it (exec/command/server, users, colls,
// crud, node); each embeds *Server in its Handlers and registers its commands with a
// Family. The exec root builds the Server with the families and dispatches each request.
//
//	add(&command.Command{Name: "find", Run: h.find, Action: auth.ActionRead, Counter: command.OpQuery,
//		Props: command.OpensCursor | command.InTxn | command.Explainable | command.APIV1})
package command
