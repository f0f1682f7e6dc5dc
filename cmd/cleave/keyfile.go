package main

import (
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
)

// validateKeyFile reads and checks --keyFile (auth.ReadKeyFile: MongoDB's rules, an error
// at start), which turns access control on as mongod's --keyFile does. A cluster with access
// control needs it: its nodes authenticate to each other with the key, never with a user's
// account.
func (c *Config) validateKeyFile() error {
	if c.Cluster.KeyFile == "" {
		if c.Auth && c.Cluster.Etcd != "" {
			return errors.New("--auth in a cluster (--etcd) needs --keyFile: the nodes authenticate to each other with it")
		}
		return nil
	}
	key, err := auth.ReadKeyFile(c.Cluster.KeyFile)
	if err != nil {
		return err
	}
	c.Cluster.key, c.Auth = key, true
	return nil
}

// parsedSecurity is getCmdLineOpts' parsed.security: keyFile (its path) when set, and
// authorization.
func (c *Config) parsedSecurity() bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	if c.Cluster.KeyFile != "" {
		b.AppendString("keyFile", c.Cluster.KeyFile)
	}
	return b.AppendString("authorization", c.authorization()).Build()
}
