// trainhub-device-plugin advertises the fake GPUs of the test cluster's real node to the
// kubelet through the device-plugin API (k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1).
//
// The GPUs are the ones of a fake NVML state file (tests/fixtures/fake_nvml): gpu_count and
// gpu<i>.uuid name the devices. On Allocate a container gets:
//   - NVIDIA_VISIBLE_DEVICES=<uuids> and CUDA_VISIBLE_DEVICES=0..k-1 (it holds exactly k GPUs),
//   - the fake libnvidia-ml.so.1 mounted where the NVIDIA container toolkit puts the real one,
//   - FAKE_NVML_STATE naming a state file that lists only its own GPUs, kept in step with the
//     node's state file, so NVML inside the pod sees what a real container would see.
//
// With -replicas N it shares the GPUs as NVIDIA's device plugin does with time-slicing and
// renameByDefault: each GPU is N devices <uuid>::<k> (k = 0..N-1) of -resource
// (nvidia.com/gpu.shared), and a container holding replicas gets the GPUs under them, each
// once (NVIDIA_VISIBLE_DEVICES=<uuid>): several containers see, and share, the same GPU.
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

const (
	containerLibrary  = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"
	containerStateDir = "/run/trainhub-fake-nvml"
	stateFileName     = "state"
)

type config struct {
	socketDir string
	resource  string
	library   string
	state     string
	allocDir  string
	endpoint  string
	replicas  int // 0: whole GPUs; N: each GPU advertised as N time-sliced replicas
}

// replicaSeparator joins a GPU's UUID and a replica's number in a device ID, as NVIDIA's
// device plugin does (GPU-<uuid>::3).
const replicaSeparator = "::"

// deviceIDs lists what the kubelet is offered for one GPU: the GPU itself, or its replicas.
func deviceIDs(uuid string, replicas int) []string {
	if replicas == 0 {
		return []string{uuid}
	}
	ids := make([]string, replicas)
	for k := range ids {
		ids[k] = uuid + replicaSeparator + strconv.Itoa(k)
	}
	return ids
}

// fleet is the parsed node state file: global lines and, per GPU index, its key=value lines.
type fleet struct {
	global []string
	gpus   []map[string]string // index -> key (without the gpu<i>. prefix) -> value
}

func readFleet(path string) (*fleet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fl := &fleet{}
	count := -1
	perGPU := map[int]map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if key == "gpu_count" {
			if count, err = strconv.Atoi(value); err != nil || count < 0 {
				return nil, fmt.Errorf("%s: gpu_count=%q is not a count", path, value)
			}
			continue
		}
		if rest, found := strings.CutPrefix(key, "gpu"); found {
			idx, field, dotted := strings.Cut(rest, ".")
			if i, err := strconv.Atoi(idx); dotted && err == nil {
				if perGPU[i] == nil {
					perGPU[i] = map[string]string{}
				}
				perGPU[i][field] = value
				continue
			}
		}
		fl.global = append(fl.global, line)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if count < 0 {
		return nil, fmt.Errorf("%s: no gpu_count line", path)
	}
	for i := 0; i < count; i++ {
		g := perGPU[i]
		if g == nil || g["uuid"] == "" {
			return nil, fmt.Errorf("%s: gpu%d has no uuid", path, i)
		}
		fl.gpus = append(fl.gpus, g)
	}
	return fl, nil
}

// render writes the state file of a container holding the GPUs with these UUIDs, in order.
func (fl *fleet) render(uuids []string) string {
	var b strings.Builder
	for _, line := range fl.global {
		b.WriteString(line + "\n")
	}
	fmt.Fprintf(&b, "gpu_count=%d\n", len(uuids))
	for j, uuid := range uuids {
		for _, g := range fl.gpus {
			if g["uuid"] != uuid {
				continue
			}
			keys := make([]string, 0, len(g))
			for k := range g {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				fmt.Fprintf(&b, "gpu%d.%s=%s\n", j, k, g[k])
			}
		}
	}
	return b.String()
}

type plugin struct {
	pluginapi.UnimplementedDevicePluginServer
	cfg config

	mu     sync.Mutex
	fleet  *fleet
	allocs map[string][]string // allocation directory -> UUIDs
}

func (p *plugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

func (p *plugin) devices() []*pluginapi.Device {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*pluginapi.Device, 0, len(p.fleet.gpus))
	for _, g := range p.fleet.gpus {
		for _, id := range deviceIDs(g["uuid"], p.cfg.replicas) {
			out = append(out, &pluginapi.Device{ID: id, Health: pluginapi.Healthy})
		}
	}
	return out
}

func (p *plugin) ListAndWatch(_ *pluginapi.Empty, stream pluginapi.DevicePlugin_ListAndWatchServer) error {
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: p.devices()}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

func (p *plugin) GetPreferredAllocation(context.Context, *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	return &pluginapi.PreferredAllocationResponse{}, nil
}

func (p *plugin) PreStartContainer(context.Context, *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	return &pluginapi.PreStartContainerResponse{}, nil
}

func (p *plugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for _, creq := range req.ContainerRequests {
		uuids, err := p.ordered(creq.DevicesIds)
		if err != nil {
			return nil, err
		}
		dir, err := p.allocation(uuids)
		if err != nil {
			return nil, err
		}
		indices := make([]string, len(uuids))
		for i := range uuids {
			indices[i] = strconv.Itoa(i)
		}
		log.Printf("allocate %v -> %s", uuids, dir)
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{
				"NVIDIA_VISIBLE_DEVICES": strings.Join(uuids, ","),
				"CUDA_VISIBLE_DEVICES":   strings.Join(indices, ","),
				"FAKE_NVML_STATE":        containerStateDir + "/" + stateFileName,
			},
			Mounts: []*pluginapi.Mount{
				{ContainerPath: containerLibrary, HostPath: p.cfg.library, ReadOnly: true},
				{ContainerPath: containerStateDir, HostPath: dir, ReadOnly: true},
			},
		})
	}
	return resp, nil
}

// ordered returns the GPUs of the requested devices in the node's GPU order, each once (two
// replicas of one GPU are that GPU), refusing unknown ones.
func (p *plugin) ordered(ids []string) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	want := map[string]bool{}
	for _, id := range ids {
		uuid, replica, shared := strings.Cut(id, replicaSeparator)
		if k, err := strconv.Atoi(replica); shared != (p.cfg.replicas > 0) ||
			(shared && (err != nil || k < 0 || k >= p.cfg.replicas)) {
			return nil, fmt.Errorf("unknown device id %q", id)
		}
		want[uuid] = true
	}
	var out []string
	for _, g := range p.fleet.gpus {
		if want[g["uuid"]] {
			out = append(out, g["uuid"])
			delete(want, g["uuid"])
		}
	}
	if len(want) > 0 {
		return nil, fmt.Errorf("unknown device ids: %v", ids)
	}
	return out, nil
}

// allocation creates (or reuses) the directory whose state file lists these GPUs.
func (p *plugin) allocation(uuids []string) (string, error) {
	sum := sha256.Sum256([]byte(strings.Join(uuids, ",")))
	dir := filepath.Join(p.cfg.allocDir, hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.allocs[dir] = uuids
	return dir, writeAtomic(filepath.Join(dir, stateFileName), p.fleet.render(uuids))
}

// The fake library re-reads its state file on every call: replace it, never rewrite it.
func writeAtomic(path, text string) error {
	tmp := path + ".partial"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// follow re-renders every allocation's state file when the node's state file changes.
func (p *plugin) follow(ctx context.Context) {
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
		st, err := os.Stat(p.cfg.state)
		if err != nil || st.ModTime().Equal(last) {
			continue
		}
		last = st.ModTime()
		fl, err := readFleet(p.cfg.state)
		if err != nil {
			log.Printf("keeping the previous GPUs: %v", err)
			continue
		}
		p.mu.Lock()
		p.fleet = fl
		for dir, uuids := range p.allocs {
			if err := writeAtomic(filepath.Join(dir, stateFileName), fl.render(uuids)); err != nil {
				log.Printf("updating %s: %v", dir, err)
			}
		}
		p.mu.Unlock()
	}
}

func (p *plugin) serve() (*grpc.Server, error) {
	sock := filepath.Join(p.cfg.socketDir, p.cfg.endpoint)
	_ = os.Remove(sock)
	lis, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	go func() { _ = srv.Serve(lis) }()
	return srv, nil
}

func (p *plugin) register() error {
	conn, err := grpc.NewClient("unix://"+filepath.Join(p.cfg.socketDir, "kubelet.sock"),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     p.cfg.endpoint,
		ResourceName: p.cfg.resource,
	})
	return err
}

func inode(path string) uint64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Sys().(*syscall.Stat_t).Ino
}

// run serves and registers, and does both again whenever the kubelet restarts (it then
// creates kubelet.sock anew and removes the plugins' sockets).
func (p *plugin) run(ctx context.Context) error {
	kubeletSock := filepath.Join(p.cfg.socketDir, "kubelet.sock")
	own := filepath.Join(p.cfg.socketDir, p.cfg.endpoint)
	var srv *grpc.Server
	var registeredWith uint64
	defer func() {
		if srv != nil {
			srv.Stop()
		}
		_ = os.Remove(own)
	}()
	for {
		kubelet := inode(kubeletSock)
		_, ownErr := os.Stat(own)
		if kubelet != 0 && (kubelet != registeredWith || ownErr != nil) {
			if srv != nil {
				srv.Stop()
			}
			var err error
			if srv, err = p.serve(); err != nil {
				return err
			}
			if err := p.register(); err != nil {
				log.Printf("registering with the kubelet: %v (trying again)", err)
				registeredWith = 0
			} else {
				log.Printf("registered %s (%d devices) with the kubelet", p.cfg.resource, len(p.devices()))
				registeredWith = kubelet
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

func main() {
	var cfg config
	flag.StringVar(&cfg.socketDir, "socket-dir", pluginapi.DevicePluginPath, "the kubelet's device-plugins directory")
	flag.StringVar(&cfg.resource, "resource", "nvidia.com/gpu", "extended resource name")
	flag.StringVar(&cfg.library, "nvml-library", "", "host path of the (fake) libnvidia-ml.so.1")
	flag.StringVar(&cfg.state, "nvml-state", "", "host path of the fake NVML state file naming the GPUs")
	flag.StringVar(&cfg.allocDir, "alloc-dir", "", "directory for the per-container state files")
	flag.StringVar(&cfg.endpoint, "endpoint", "trainhub-gpu.sock", "socket name in -socket-dir")
	flag.IntVar(&cfg.replicas, "replicas", 0, "time-slicing: advertise each GPU as this many replicas <uuid>::<k> (0: whole GPUs)")
	flag.Parse()
	if cfg.replicas < 0 || cfg.replicas == 1 {
		log.Fatalf("-replicas=%d: 0 for whole GPUs, or 2 or more replicas of each GPU", cfg.replicas)
	}
	for name, value := range map[string]string{"-nvml-library": cfg.library, "-nvml-state": cfg.state, "-alloc-dir": cfg.allocDir} {
		if value == "" {
			log.Fatalf("%s is required", name)
		}
	}
	if _, err := os.Stat(cfg.library); err != nil {
		log.Fatalf("-nvml-library: %v", err)
	}
	fl, err := readFleet(cfg.state)
	if err != nil {
		log.Fatalf("-nvml-state: %v", err)
	}
	p := &plugin{cfg: cfg, fleet: fl, allocs: map[string][]string{}}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go p.follow(ctx)
	if err := p.run(ctx); err != nil {
		log.Fatal(err)
	}
}
