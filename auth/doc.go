// Package auth owns access control's model: SCRAM credentials and the server side of a SCRAM
// conversation (SCRAM-SHA-1 and SCRAM-SHA-256, on xdg-go/scram, the mongo driver's own SCRAM
// library), users and custom roles with their stored shape, the built-in roles, and the
// decision whether a set of authenticated users may run a command. It knows no commands,
// sockets or storage: the executor declares what each command needs (a Need), persists the
// records this package encodes, and keeps a Registry of the current ones.
//
// # Invariants
//
//   - A password is never kept: NewCredential derives {salt, iterations, storedKey,
//     serverKey}, and a Conversation only ever sees those.
//   - SCRAM-SHA-1's password is MongoDB's digest hex(md5(user + ":mongo:" + password));
//     SCRAM-SHA-256's is the password after SASLprep (done by xdg-go/scram).
//   - Authorization fails closed: ActionUndeclared is granted by root alone, and a user
//     dropped after authenticating has no privileges.
//   - A Registry is immutable; a change builds a new one.
//
// # Usage
//
//	cred, _ := auth.NewCredential(auth.SCRAMSHA256, "alice", "secret")
//	u := &auth.User{Name: auth.UserName{User: "alice", DB: "admin"},
//		Credentials: map[auth.Mechanism]auth.Credential{auth.SCRAMSHA256: cred},
//		Roles: []auth.RoleName{{Role: "read", DB: "app"}}}
//	reg := auth.NewRegistry([]*auth.User{u}, nil)
//	reg.Allowed([]auth.UserName{u.Name}, auth.Need{Action: auth.ActionRead, DB: "app"})  // true
//	reg.Allowed([]auth.UserName{u.Name}, auth.Need{Action: auth.ActionWrite, DB: "app"}) // false
package auth
