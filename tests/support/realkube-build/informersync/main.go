// Command informersync starts a client-go informer on the ConfigMaps of one
// namespace and reports, as JSON on stdout, whether its cache synced within
// the timeout and which requests it sent to get there. client-go 1.35 uses a
// streaming list (a watch with sendInitialEvents=true) by default: a server
// that never ends the initial events with the annotated bookmark leaves the
// informer unsynced, which is what a Go controller started against it sees.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

type recorder struct {
	next     http.RoundTripper
	mu       sync.Mutex
	requests []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.Contains(req.URL.Path, "/configmaps") {
		r.mu.Lock()
		r.requests = append(r.requests, req.Method+" "+req.URL.Path+"?"+req.URL.RawQuery)
		r.mu.Unlock()
	}
	return r.next.RoundTrip(req)
}

type report struct {
	Synced   bool     `json:"synced"`
	Names    []string `json:"names"`
	Requests []string `json:"requests"`
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the server")
	namespace := flag.String("namespace", "default", "namespace of the ConfigMaps")
	timeout := flag.Duration("timeout", 20*time.Second, "how long to wait for the cache to sync")
	flag.Parse()

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	rec := &recorder{}
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		rec.next = rt
		return rec
	})
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(*namespace))
	informer := factory.Core().V1().ConfigMaps().Informer()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	factory.Start(ctx.Done())
	out := report{Synced: cache.WaitForCacheSync(ctx.Done(), informer.HasSynced), Names: []string{}}
	for _, obj := range informer.GetStore().List() {
		out.Names = append(out.Names, obj.(*corev1.ConfigMap).Name)
	}
	sort.Strings(out.Names)
	cancel()
	factory.Shutdown()
	rec.mu.Lock()
	out.Requests = rec.requests
	rec.mu.Unlock()
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(2)
	}
	if !out.Synced {
		os.Exit(1)
	}
}
