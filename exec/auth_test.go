package exec

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/wire"
)

// authExecutor is an executor with access control on and a root user root/rootpw.
func authExecutor(t *testing.T) *Executor {
	t.Helper()
	e := testExecutor(t, 1, Options{Auth: AuthOptions{Enabled: true}})
	if err := e.EnsureRootUser("root", "rootpw"); err != nil {
		t.Fatal(err)
	}
	return e
}

// connFrom opens a connection from ip.
func connFrom(e *Executor, id int64, ip string) wire.ConnHandler {
	return e.Connect(wire.ConnInfo{ID: id, Remote: &net.TCPAddr{IP: net.ParseIP(ip), Port: 50000}})
}

// authRun runs one command (Extended JSON) on db and returns the reply.
func authRun(t *testing.T, c wire.ConnHandler, db, cmd string) bsoncore.Document {
	t.Helper()
	reply, err := fpHandle(t, c, db, cmd)
	if err != nil {
		t.Fatal(err)
	}
	return reply
}

// wantCode runs cmd and checks its code (0 for ok) and, if msg is set, that errmsg starts
// with it.
func wantCode(t *testing.T, c wire.ConnHandler, db, cmd string, code int32, msg string) bsoncore.Document {
	t.Helper()
	reply := authRun(t, c, db, cmd)
	if got := fpReplyCode(reply); got != code {
		t.Fatalf("%s: code %d, want %d: %s", cmd, got, code, reply)
	}
	if msg != "" {
		if got, _ := reply.Lookup("errmsg").StringValueOK(); !strings.HasPrefix(got, msg) {
			t.Fatalf("%s: errmsg %q, want prefix %q", cmd, got, msg)
		}
	}
	return reply
}

// login authenticates c as user with SCRAM through saslStart and saslContinue, as the drivers
// do, and returns the code of the first failure (0 on success).
func login(t *testing.T, c wire.ConnHandler, db, user, password string, m auth.Mechanism, skipEmpty bool) int32 {
	t.Helper()
	var client *scram.Client
	var err error
	if m == auth.SCRAMSHA1 {
		client, err = scram.SHA1.NewClientUnprepped(user, auth.PasswordDigest(user, password), "")
	} else {
		client, err = scram.SHA256.NewClient(user, password, "")
	}
	if err != nil {
		t.Fatal(err)
	}
	conv := client.NewConversation()
	first, _ := conv.Step("")
	cmd := bsoncore.NewDocumentBuilder().AppendInt32("saslStart", 1).AppendString("mechanism", string(m)).
		AppendBinary("payload", 0, []byte(first)).AppendBoolean("autoAuthorize", true).
		AppendDocument("options", bsoncore.NewDocumentBuilder().AppendBoolean("skipEmptyExchange", skipEmpty).Build()).
		AppendString("$db", db).Build()
	for {
		reply, err := c.Handle(context.Background(), &wire.Request{Body: cmd})
		if err != nil {
			t.Fatal(err)
		}
		if code := fpReplyCode(reply); code != 0 {
			return code
		}
		_, payload, _ := reply.Lookup("payload").BinaryOK()
		if done, _ := reply.Lookup("done").BooleanOK(); done {
			if !conv.Done() {
				if _, err := conv.Step(string(payload)); err != nil {
					t.Fatalf("client: %v", err)
				}
			}
			if !conv.Valid() {
				t.Fatal("the client could not verify the server")
			}
			return 0
		}
		next := ""
		if !conv.Done() {
			if next, err = conv.Step(string(payload)); err != nil {
				t.Fatalf("client: %v", err)
			}
		}
		cmd = bsoncore.NewDocumentBuilder().AppendInt32("saslContinue", 1).AppendInt32("conversationId", 1).
			AppendBinary("payload", 0, []byte(next)).AppendString("$db", db).Build()
	}
}

func TestAuthEveryCommandDeclaresAction(t *testing.T) {
	e := testExecutor(t, 1, Options{TestCommands: true})
	for _, name := range e.Commands.Names() {
		if cmd := e.Commands.Get(name); cmd.Action == auth.ActionUndeclared {
			t.Errorf("command %s declares no action (command.action)", name)
		}
	}
}

func TestAuthSCRAMLogin(t *testing.T) {
	cases := []struct {
		name      string
		mech      auth.Mechanism
		skipEmpty bool
		password  string
		want      int32
	}{
		{"SHA256", auth.SCRAMSHA256, true, "rootpw", 0},
		{"SHA256EmptyExchange", auth.SCRAMSHA256, false, "rootpw", 0},
		{"SHA1", auth.SCRAMSHA1, true, "rootpw", 0},
		{"SHA1EmptyExchange", auth.SCRAMSHA1, false, "rootpw", 0},
		{"WrongPassword", auth.SCRAMSHA256, true, "nope", 18},
		{"SHA1WrongPassword", auth.SCRAMSHA1, false, "nope", 18},
	}
	e := authExecutor(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := connFrom(e, int64(i+1), "10.0.0.1")
			if got := login(t, c, "admin", "root", tc.password, tc.mech, tc.skipEmpty); got != tc.want {
				t.Fatalf("login code %d, want %d", got, tc.want)
			}
			status := authRun(t, c, "admin", `{"connectionStatus": 1}`)
			users, _ := status.Lookup("authInfo", "authenticatedUsers").ArrayOK()
			n, _ := users.Values()
			if want := map[bool]int{true: 1, false: 0}[tc.want == 0]; len(n) != want {
				t.Fatalf("authenticatedUsers %s, want %d", users, want)
			}
			if tc.want == 0 {
				wantCode(t, c, "app", `{"insert": "c", "documents": [{"_id": 1}]}`, 0, "")
				wantCode(t, c, "admin", `{"logout": 1}`, 0, "")
			}
			wantCode(t, c, "app", `{"find": "c"}`, 13, "Command find requires authentication")
		})
	}
	c := connFrom(e, 99, "10.0.0.1")
	if got := login(t, c, "app", "root", "rootpw", auth.SCRAMSHA256, true); got != 18 {
		t.Fatalf("root authenticating on the wrong database: code %d", got)
	}
	wantCode(t, c, "admin", `{"saslStart": 1, "mechanism": "PLAIN", "payload": ""}`, 334, "")
	wantCode(t, c, "admin", `{"saslContinue": 1, "conversationId": 1, "payload": ""}`, 17, "")
	wantCode(t, c, "$external", `{"authenticate": 1, "mechanism": "MONGODB-X509"}`, 334,
		"Received authentication for mechanism MONGODB-X509 which is not enabled")
}

func TestAuthSpeculativeHello(t *testing.T) {
	e := authExecutor(t)
	c := connFrom(e, 1, "10.0.0.1")
	client, _ := scram.SHA256.NewClient("root", "rootpw", "")
	conv := client.NewConversation()
	first, _ := conv.Step("")
	spec := bsoncore.NewDocumentBuilder().AppendInt32("saslStart", 1).AppendString("mechanism", "SCRAM-SHA-256").
		AppendBinary("payload", 0, []byte(first)).AppendString("db", "admin").
		AppendDocument("options", bsoncore.NewDocumentBuilder().AppendBoolean("skipEmptyExchange", true).Build()).Build()
	hello := bsoncore.NewDocumentBuilder().AppendInt32("hello", 1).AppendString("saslSupportedMechs", "admin.root").
		AppendDocument("speculativeAuthenticate", spec).AppendString("$db", "admin").Build()
	reply, err := c.Handle(context.Background(), &wire.Request{Body: hello})
	if err != nil {
		t.Fatal(err)
	}
	if mechs := reply.Lookup("saslSupportedMechs").String(); mechs != `["SCRAM-SHA-1","SCRAM-SHA-256"]` {
		t.Fatalf("saslSupportedMechs %s", mechs)
	}
	sa, ok := reply.Lookup("speculativeAuthenticate").DocumentOK()
	if !ok {
		t.Fatalf("no speculativeAuthenticate in %s", reply)
	}
	_, payload, _ := sa.Lookup("payload").BinaryOK()
	final, err := conv.Step(string(payload))
	if err != nil {
		t.Fatal(err)
	}
	cont := bsoncore.NewDocumentBuilder().AppendInt32("saslContinue", 1).AppendInt32("conversationId", 1).
		AppendBinary("payload", 0, []byte(final)).AppendString("$db", "admin").Build()
	reply, _ = c.Handle(context.Background(), &wire.Request{Body: cont})
	if done, _ := reply.Lookup("done").BooleanOK(); !done || fpReplyCode(reply) != 0 {
		t.Fatalf("saslContinue: %s", reply)
	}
	wantCode(t, c, "app", `{"find": "c"}`, 0, "")
}

func TestAuthLocalhostException(t *testing.T) {
	e := testExecutor(t, 1, Options{Auth: AuthOptions{Enabled: true}})
	remote := connFrom(e, 1, "10.0.0.1")
	local := connFrom(e, 2, "127.0.0.1")
	wantCode(t, local, "admin", `{"ping": 1}`, 0, "")
	wantCode(t, local, "app", `{"find": "c"}`, 13, "Command find requires authentication")
	wantCode(t, remote, "admin", `{"createUser": "a", "pwd": "pw", "roles": ["root"]}`, 13, "")
	wantCode(t, local, "app", `{"createUser": "a", "pwd": "pw", "roles": []}`, 13, "")
	wantCode(t, local, "admin", `{"createUser": "a", "pwd": "pw", "roles": ["root"]}`, 0, "")
	wantCode(t, local, "admin", `{"createUser": "b", "pwd": "pw", "roles": ["root"]}`, 13, "Command createUser requires authentication")
	if login(t, local, "admin", "a", "pw", auth.SCRAMSHA256, true) != 0 {
		t.Fatal("the first user cannot log in")
	}
	wantCode(t, local, "admin", `{"createUser": "b", "pwd": "pw", "roles": ["root"]}`, 0, "")
}

func TestAuthRolesEnforced(t *testing.T) {
	e := authExecutor(t)
	admin := connFrom(e, 1, "10.0.0.1")
	if login(t, admin, "admin", "root", "rootpw", auth.SCRAMSHA256, true) != 0 {
		t.Fatal("root cannot log in")
	}
	wantCode(t, admin, "app", `{"createUser": "reader", "pwd": "pw", "roles": ["read"]}`, 0, "")
	wantCode(t, admin, "app", `{"createUser": "writer", "pwd": "pw", "roles": [{"role": "readWrite", "db": "app"}]}`, 0, "")
	wantCode(t, admin, "app", `{"createUser": "bad", "pwd": "pw", "roles": ["root"]}`, 31, "Could not find role: root@app")
	wantCode(t, admin, "app", `{"createUser": "reader", "pwd": "pw", "roles": []}`, 51003, `User "reader@app" already exists`)
	wantCode(t, admin, "app", `{"insert": "c", "documents": [{"_id": 1}]}`, 0, "")

	reader := connFrom(e, 2, "10.0.0.1")
	if login(t, reader, "app", "reader", "pw", auth.SCRAMSHA1, true) != 0 {
		t.Fatal("reader cannot log in")
	}
	wantCode(t, reader, "app", `{"find": "c"}`, 0, "")
	wantCode(t, reader, "app", `{"listCollections": 1}`, 0, "")
	wantCode(t, reader, "app", `{"insert": "c", "documents": [{"_id": 2}]}`, 13,
		`not authorized on app to execute command { insert: "c", documents: [ { _id: 2 } ], $db: "app" }`)
	wantCode(t, reader, "other", `{"find": "c"}`, 13, "not authorized on other")
	wantCode(t, reader, "admin", `{"serverStatus": 1}`, 13, "")
	wantCode(t, reader, "app", `{"usersInfo": "reader"}`, 0, "")
	wantCode(t, reader, "app", `{"usersInfo": "writer"}`, 13, "")

	writer := connFrom(e, 3, "10.0.0.1")
	if login(t, writer, "app", "writer", "pw", auth.SCRAMSHA256, false) != 0 {
		t.Fatal("writer cannot log in")
	}
	wantCode(t, writer, "app", `{"insert": "c", "documents": [{"_id": 2}]}`, 0, "")
	wantCode(t, writer, "app", `{"aggregate": "c", "pipeline": [{"$out": "d"}], "cursor": {}}`, 0, "")
	wantCode(t, writer, "app", `{"aggregate": "c", "pipeline": [{"$out": {"db": "other", "coll": "d"}}], "cursor": {}}`, 13, "")
	wantCode(t, writer, "app", `{"collMod": "c"}`, 13, "")
	wantCode(t, writer, "app", `{"createUser": "x", "pwd": "secretpw", "roles": []}`, 13,
		`not authorized on app to execute command { createUser: "x", pwd: "xxx", roles: [], $db: "app" }`)

	// A role granted later applies to the connection at once; a dropped user loses it all.
	wantCode(t, admin, "app", `{"grantRolesToUser": "reader", "roles": ["readWrite"]}`, 0, "")
	wantCode(t, reader, "app", `{"insert": "c", "documents": [{"_id": 3}]}`, 0, "")
	wantCode(t, admin, "app", `{"revokeRolesFromUser": "reader", "roles": ["readWrite"]}`, 0, "")
	wantCode(t, reader, "app", `{"insert": "c", "documents": [{"_id": 4}]}`, 13, "")
	wantCode(t, admin, "app", `{"dropUser": "reader"}`, 0, "")
	wantCode(t, reader, "app", `{"find": "c"}`, 13, "")
	wantCode(t, admin, "app", `{"dropUser": "reader"}`, 11, "User 'reader@app' not found")
}

func TestAuthUsersInfoShape(t *testing.T) {
	e := authExecutor(t)
	c := connFrom(e, 1, "10.0.0.1")
	login(t, c, "admin", "root", "rootpw", auth.SCRAMSHA256, true)
	wantCode(t, c, "app", `{"createUser": "u", "pwd": "pw", "roles": ["read"], "mechanisms": ["SCRAM-SHA-256"], "customData": {"team": 1}}`, 0, "")
	reply := wantCode(t, c, "app", `{"usersInfo": 1}`, 0, "")
	u, _ := reply.Lookup("users", "0").DocumentOK()
	var keys []string
	elems, _ := u.Elements()
	for _, el := range elems {
		keys = append(keys, el.Key())
	}
	if got := strings.Join(keys, ","); got != "_id,userId,user,db,roles,customData,mechanisms" {
		t.Fatalf("usersInfo fields %s: %s", got, u)
	}
	if id := u.Lookup("_id").StringValue(); id != "app.u" {
		t.Fatalf("_id %s", id)
	}
	reply = wantCode(t, c, "app", `{"usersInfo": {"user": "u", "db": "app"}, "showCredentials": true}`, 0, "")
	cred, ok := reply.Lookup("users", "0", "credentials", "SCRAM-SHA-256").DocumentOK()
	// The password never appears as a string value (its BSON encoding: length 3, "pw", 0);
	// a bare "pw" could occur by chance in the random salt and keys.
	if !ok || cred.Lookup("iterationCount").Int32() != 15000 || strings.Contains(string(reply), "\x03\x00\x00\x00pw\x00") {
		t.Fatalf("credentials: %s", reply)
	}
	wantCode(t, c, "app", `{"updateUser": "u", "pwd": "pw2"}`, 0, "")
	other := connFrom(e, 2, "10.0.0.1")
	if login(t, other, "app", "u", "pw", auth.SCRAMSHA256, true) != 18 || login(t, other, "app", "u", "pw2", auth.SCRAMSHA256, true) != 0 {
		t.Fatal("updateUser did not change the password")
	}
	if login(t, other, "app", "u", "pw2", auth.SCRAMSHA1, true) != 18 {
		t.Fatal("a user without SCRAM-SHA-1 credentials logged in with SCRAM-SHA-1")
	}
	reply = wantCode(t, c, "app", `{"dropAllUsersFromDatabase": 1}`, 0, "")
	if n := reply.Lookup("n").Int32(); n != 1 {
		t.Fatalf("dropAllUsersFromDatabase n = %d", n)
	}
}

func TestAuthCustomRoles(t *testing.T) {
	e := authExecutor(t)
	c := connFrom(e, 1, "10.0.0.1")
	login(t, c, "admin", "root", "rootpw", auth.SCRAMSHA256, true)
	wantCode(t, c, "app", `{"createRole": "ordersReader", "roles": [], "privileges": [{"resource": {"db": "app", "collection": "orders"}, "actions": ["find"]}]}`, 0, "")
	wantCode(t, c, "app", `{"createRole": "ordersClerk", "roles": ["ordersReader"], "privileges": [{"resource": {"db": "app", "collection": "orders"}, "actions": ["insert"]}]}`, 0, "")
	wantCode(t, c, "app", `{"createRole": "ordersClerk", "roles": [], "privileges": []}`, 51002, `Role "ordersClerk@app" already exists`)
	wantCode(t, c, "app", `{"createRole": "bad", "roles": [], "privileges": [{"resource": {"db": "app", "collection": ""}, "actions": ["fly"]}]}`, 2,
		"Unrecognized action privilege string: fly")
	wantCode(t, c, "app", `{"createRole": "read", "roles": [], "privileges": []}`, 2, "")
	wantCode(t, c, "app", `{"createUser": "clerk", "pwd": "pw", "roles": ["ordersClerk"]}`, 0, "")
	reply := wantCode(t, c, "app", `{"rolesInfo": "ordersClerk", "showPrivileges": true}`, 0, "")
	if got := reply.Lookup("roles", "0", "inheritedRoles").String(); got != `[{"role": "ordersReader","db": "app"}]` {
		t.Fatalf("inheritedRoles %s", got)
	}
	reply = wantCode(t, c, "app", `{"rolesInfo": 1, "showBuiltinRoles": true}`, 0, "")
	if !strings.Contains(reply.Lookup("roles").String(), `"readWrite"`) {
		t.Fatalf("built-in roles missing: %s", reply)
	}

	clerk := connFrom(e, 2, "10.0.0.1")
	login(t, clerk, "app", "clerk", "pw", auth.SCRAMSHA256, true)
	wantCode(t, clerk, "app", `{"insert": "orders", "documents": [{"_id": 1}]}`, 0, "")
	wantCode(t, clerk, "app", `{"find": "orders"}`, 0, "")
	wantCode(t, clerk, "app", `{"find": "users"}`, 13, "")
	status := authRun(t, clerk, "admin", `{"connectionStatus": 1}`)
	if got := status.Lookup("authInfo", "authenticatedUserRoles").String(); !strings.Contains(got, "ordersReader") {
		t.Fatalf("authenticatedUserRoles %s", got)
	}
	wantCode(t, c, "app", `{"dropRole": "ordersReader"}`, 0, "")
	wantCode(t, clerk, "app", `{"find": "orders"}`, 13, "")
	wantCode(t, c, "app", `{"dropRole": "ordersReader"}`, 31, "Could not find role: ordersReader@app")
}

func TestAuthOffChangesNothing(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := connFrom(e, 1, "10.0.0.1")
	wantCode(t, c, "app", `{"insert": "c", "documents": [{"_id": 1}]}`, 0, "")
	wantCode(t, c, "admin", `{"serverStatus": 1}`, 0, "")
}

// TestAuthUserCommandsCompatErrors: the user commands' refusals in MongoDB 7.0's words, in
// its order (user_management_commands.cpp): the password's credentials are built before the
// user document is checked, the roles are checked before the user is looked for.
func TestAuthUserCommandsCompatErrors(t *testing.T) {
	e := testExecutor(t, 1, Options{})
	c := e.Connect(wire.ConnInfo{ID: 1})
	const emptyPwd = "Error preflighting UTF-8 conversion: U_STRING_NOT_TERMINATED_WARNING"
	for _, tc := range []struct {
		cmd  string
		code int32
		msg  string
	}{
		{`{"createUser": "have", "pwd": "pw", "roles": []}`, 0, ""},
		{`{"createUser": "", "pwd": "", "roles": []}`, 50687, emptyPwd},
		{`{"createUser": "", "pwd": "pw", "roles": []}`, 2, "User document needs 'user' field to be non-empty"},
		{`{"createUser": "x", "pwd": "", "roles": [], "mechanisms": ["SCRAM-SHA-1"]}`, 0, ""},
		{`{"updateUser": "nobody", "pwd": ""}`, 50687, emptyPwd},
		{`{"updateUser": "nobody", "roles": ["nope"]}`, 31, "Could not find role: nope@app"},
		{`{"updateUser": "nobody", "customData": {}}`, 11, "User nobody@app not found"},
		{`{"dropUser": "nobody"}`, 11, "User 'nobody@app' not found"},
		{`{"revokeRolesFromUser": "nobody", "roles": ["read"]}`, 11, `Could not find user "nobody" for db "app"`},
	} {
		wantCode(t, c, "app", tc.cmd, tc.code, tc.msg)
	}
}
