package cluster

import clientv3 "go.etcd.io/etcd/client/v3"

// createdAbsent is the condition "key does not exist".
func createdAbsent(key string) clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
}

// opPut is a put in a transaction.
func opPut(key, val string) clientv3.Op { return clientv3.OpPut(key, val) }

// withPrefix makes a Get read every key with the given prefix.
func withPrefix() clientv3.OpOption { return clientv3.WithPrefix() }

// modRevision compares key's last modification with rev.
func modRevision(key string, rev int64) clientv3.Cmp {
	return clientv3.Compare(clientv3.ModRevision(key), "=", rev)
}
