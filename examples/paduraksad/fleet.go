package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/paduraksa/paduraksa/fleet"
)

// etcdDialTimeout bounds the first connection to etcd: a daemon that
// cannot read its document does not start.
const etcdDialTimeout = 5 * time.Second

// etcdClient returns the client of the -etcd cluster, made at the first
// call and closed when the daemon stops.
func (a *app) etcdClient() (*clientv3.Client, error) {
	if a.etcdCli != nil {
		return a.etcdCli, nil
	}
	var urls []string
	for _, u := range strings.Split(a.f.etcd, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	if len(urls) == 0 {
		return nil, fmt.Errorf("-etcd %q names no URL", a.f.etcd)
	}
	// The client's own log (its retries while etcd is away) is left
	// out: the source logs each change of reachability once.
	cli, err := clientv3.New(clientv3.Config{Endpoints: urls, DialTimeout: etcdDialTimeout, Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("-etcd: %w", err)
	}
	a.deferClose(func() { cli.Close() })
	a.etcdCli = cli
	return cli, nil
}

// startEtcd returns the source of the fleet's document in the -etcd
// cluster. Its reachability is logged as it changes; meanwhile the last
// applied document keeps serving.
func (a *app) startEtcd() (*fleet.Etcd, error) {
	cli, err := a.etcdClient()
	if err != nil {
		return nil, err
	}
	src, err := fleet.NewEtcd(fleet.EtcdConfig{Client: cli, Prefix: a.f.etcdPrefix, Logger: a.log.With("instance", a.f.instance)})
	if err != nil {
		return nil, fmt.Errorf("-etcd-prefix: %w", err)
	}
	return src, nil
}

// configName says where the document comes from, as the log says.
func (a *app) configName() string {
	switch {
	case a.f.etcd != "":
		return "etcd " + a.f.etcd + " " + a.f.etcdPrefix + "config"
	case a.f.configPath != "":
		return a.f.configPath
	case a.f.gatewayPath != "":
		return a.f.gatewayPath
	}
	return "embedded demo"
}

// hostname is -instance's default: the machine's name, or "paduraksad".
func hostname() string {
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "paduraksad"
}
