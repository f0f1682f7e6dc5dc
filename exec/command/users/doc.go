// Package users holds the commands of authentication and of user and role management:
// saslStart and saslContinue (SCRAM), logout, connectionStatus, createUser, updateUser,
// dropUser, usersInfo, grantRolesToUser, createRole, rolesInfo and the rest, as MongoDB
// answers them. The users, roles and conversations themselves are exec/access's.
package users

import "github.com/cleavedb/cleave/exec/command"

// Handlers runs the commands of this package over the server's services.
type Handlers struct{ *command.Server }
