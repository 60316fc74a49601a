package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

const twoGPUs = "driver_version=550.54.15\ngpu_count=2\ngpu0.uuid=GPU-a\ngpu0.memory_used=1\ngpu1.uuid=GPU-b\ngpu1.memory_used=2\n"

func newPlugin(t *testing.T, replicas int) *plugin {
	t.Helper()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.WriteFile(state, []byte(twoGPUs), 0o644); err != nil {
		t.Fatal(err)
	}
	fl, err := readFleet(state)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config{state: state, allocDir: filepath.Join(dir, "alloc"), library: "/lib", replicas: replicas}
	return &plugin{cfg: cfg, fleet: fl, allocs: map[string][]string{}}
}

func ids(devices []*pluginapi.Device) string {
	out := make([]string, len(devices))
	for i, d := range devices {
		out[i] = d.ID
	}
	return strings.Join(out, ",")
}

func allocate(p *plugin, devices ...string) (*pluginapi.ContainerAllocateResponse, error) {
	resp, err := p.Allocate(context.Background(), &pluginapi.AllocateRequest{
		ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: devices}},
	})
	if err != nil {
		return nil, err
	}
	return resp.ContainerResponses[0], nil
}

func TestWholeGPUsAreAdvertisedByUUID(t *testing.T) {
	p := newPlugin(t, 0)
	if got := ids(p.devices()); got != "GPU-a,GPU-b" {
		t.Fatalf("devices = %s", got)
	}
	if _, err := allocate(p, "GPU-a::0"); err == nil {
		t.Fatal("a replica of a GPU that is not shared was allocated")
	}
}

func TestReplicasShareTheirGPU(t *testing.T) {
	p := newPlugin(t, 2)
	if got := ids(p.devices()); got != "GPU-a::0,GPU-a::1,GPU-b::0,GPU-b::1" {
		t.Fatalf("devices = %s", got)
	}
	for _, replica := range []string{"GPU-b::0", "GPU-b::1"} {
		c, err := allocate(p, replica)
		if err != nil {
			t.Fatal(err)
		}
		if c.Envs["NVIDIA_VISIBLE_DEVICES"] != "GPU-b" || c.Envs["CUDA_VISIBLE_DEVICES"] != "0" {
			t.Fatalf("%s: envs %v", replica, c.Envs)
		}
		state, err := os.ReadFile(filepath.Join(c.Mounts[1].HostPath, stateFileName))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(state), "gpu_count=1\n") || !strings.Contains(string(state), "gpu0.uuid=GPU-b\n") {
			t.Fatalf("%s: the container's NVML state:\n%s", replica, state)
		}
	}
	// Two replicas of one GPU are that GPU, once.
	c, err := allocate(p, "GPU-a::1", "GPU-a::0")
	if err != nil || c.Envs["NVIDIA_VISIBLE_DEVICES"] != "GPU-a" {
		t.Fatalf("two replicas of GPU-a: %v %v", c, err)
	}
	for _, bad := range []string{"GPU-a", "GPU-a::2", "GPU-c::0", "GPU-a::x"} {
		if _, err := allocate(p, bad); err == nil {
			t.Fatalf("%s was allocated", bad)
		}
	}
}
