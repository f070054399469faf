// This file proves the Kubernetes manifests under deploy/kubernetes fit
// seatd and each other: every document parses and every file is in the
// kustomization; the StatefulSet runs 3 pods in parallel behind a headless
// Service that publishes unready pods; the flags its container passes are
// ones `seatd serve` accepts (checked against the real binary), --peers
// names every pod by its stable DNS name and the ports seatd listens on;
// readiness probes /readyz and liveness /healthz on the --http port; the
// admin token and ticket key come from Secrets and --data-dir is a
// PersistentVolumeClaim (the image's volume); the pods run as non-root; the
// PodDisruptionBudget covers the pods and leaves each group a quorum; every
// Service selects the pods and targets ports they have.
package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// manifest is one Kubernetes object: its header, and the whole document to
// decode into the kind's struct.
type manifest struct {
	file       string
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	doc yaml.Node
}

// The parts of the kinds the tests look at; yaml ignores the rest.
type (
	statefulSet struct {
		Spec struct {
			Replicas            int    `yaml:"replicas"`
			ServiceName         string `yaml:"serviceName"`
			PodManagementPolicy string `yaml:"podManagementPolicy"`
			Selector            struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			Template struct {
				Metadata struct {
					Labels map[string]string `yaml:"labels"`
				} `yaml:"metadata"`
				Spec podSpec `yaml:"spec"`
			} `yaml:"template"`
			VolumeClaimTemplates []claimTemplate `yaml:"volumeClaimTemplates"`
		} `yaml:"spec"`
	}
	claimTemplate struct {
		Metadata struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
	}
	containerPort struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	}
	podSpec struct {
		SecurityContext struct {
			RunAsNonRoot bool  `yaml:"runAsNonRoot"`
			RunAsUser    int64 `yaml:"runAsUser"`
		} `yaml:"securityContext"`
		Containers []container `yaml:"containers"`
		Volumes    []volume    `yaml:"volumes"`
	}
	container struct {
		Name           string          `yaml:"name"`
		Image          string          `yaml:"image"`
		Command        []string        `yaml:"command"`
		Args           []string        `yaml:"args"`
		Ports          []containerPort `yaml:"ports"`
		ReadinessProbe *probe          `yaml:"readinessProbe"`
		LivenessProbe  *probe          `yaml:"livenessProbe"`
		VolumeMounts   []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
		} `yaml:"volumeMounts"`
	}
	probe struct {
		HTTPGet *struct {
			Path string `yaml:"path"`
			Port string `yaml:"port"`
		} `yaml:"httpGet"`
	}
	volume struct {
		Name   string `yaml:"name"`
		Secret *struct {
			SecretName string `yaml:"secretName"`
		} `yaml:"secret"`
		Projected *struct {
			Sources []struct {
				Secret *struct {
					Name string `yaml:"name"`
				} `yaml:"secret"`
			} `yaml:"sources"`
		} `yaml:"projected"`
	}
	service struct {
		Spec struct {
			ClusterIP                string            `yaml:"clusterIP"`
			PublishNotReadyAddresses bool              `yaml:"publishNotReadyAddresses"`
			Selector                 map[string]string `yaml:"selector"`
			Ports                    []struct {
				Name       string `yaml:"name"`
				Port       int    `yaml:"port"`
				TargetPort string `yaml:"targetPort"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	podDisruptionBudget struct {
		Spec struct {
			MaxUnavailable *int `yaml:"maxUnavailable"`
			MinAvailable   *int `yaml:"minAvailable"`
			Selector       struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
		} `yaml:"spec"`
	}
)

const kubeDir = "kubernetes"

// readManifests parses every document of every .yaml file in kubeDir
// except the kustomization.
func readManifests(t *testing.T) []*manifest {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(kubeDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in deploy/%s: %v", kubeDir, err)
	}
	var out []*manifest
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			m := &manifest{file: f}
			err := dec.Decode(&m.doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if err := m.doc.Decode(m); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if m.APIVersion == "" || m.Kind == "" || m.Metadata.Name == "" {
				t.Fatalf("%s: a document without apiVersion, kind or metadata.name", f)
			}
			out = append(out, m)
		}
	}
	return out
}

// decode decodes m into v, failing the test if it does not fit.
func (m *manifest) decode(t *testing.T, v any) {
	t.Helper()
	if err := m.doc.Decode(v); err != nil {
		t.Fatalf("%s: %s %s: %v", m.file, m.Kind, m.Metadata.Name, err)
	}
}

// ofKind returns the manifests of one kind.
func ofKind(ms []*manifest, kind string) []*manifest {
	var out []*manifest
	for _, m := range ms {
		if m.Kind == kind {
			out = append(out, m)
		}
	}
	return out
}

// selects reports whether selector matches labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(kubeDir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `yaml:"resources"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(kubeDir, "*.yaml"))
	for _, f := range files {
		if base := filepath.Base(f); base != "kustomization.yaml" && !slices.Contains(k.Resources, base) {
			t.Errorf("kustomization.yaml does not list %s", base)
		}
	}
	for _, r := range k.Resources {
		if _, err := os.Stat(filepath.Join(kubeDir, r)); err != nil {
			t.Errorf("kustomization.yaml lists %s: %v", r, err)
		}
	}
}

// seatdPods is the StatefulSet and its seatd container.
func seatdPods(t *testing.T, ms []*manifest) (*manifest, statefulSet, container) {
	t.Helper()
	sets := ofKind(ms, "StatefulSet")
	if len(sets) != 1 {
		t.Fatalf("%d StatefulSets, want 1", len(sets))
	}
	var ss statefulSet
	sets[0].decode(t, &ss)
	i := slices.IndexFunc(ss.Spec.Template.Spec.Containers, func(c container) bool { return c.Name == "seatd" })
	if i < 0 {
		t.Fatalf("StatefulSet %s has no container named seatd", sets[0].Metadata.Name)
	}
	return sets[0], ss, ss.Spec.Template.Spec.Containers[i]
}

func TestStatefulSet(t *testing.T) {
	ms := readManifests(t)
	m, ss, c := seatdPods(t, ms)
	spec := ss.Spec
	if spec.Replicas != 3 {
		t.Errorf("replicas %d, want 3", spec.Replicas)
	}
	if spec.PodManagementPolicy != "Parallel" {
		t.Errorf("podManagementPolicy %q, want Parallel: no pod is ready before a quorum runs", spec.PodManagementPolicy)
	}
	if !selects(spec.Selector.MatchLabels, spec.Template.Metadata.Labels) {
		t.Errorf("selector %v does not match the pod labels %v", spec.Selector.MatchLabels, spec.Template.Metadata.Labels)
	}
	headless := false
	for _, sm := range ofKind(ms, "Service") {
		var s service
		sm.decode(t, &s)
		if sm.Metadata.Name == spec.ServiceName {
			headless = s.Spec.ClusterIP == "None" && s.Spec.PublishNotReadyAddresses
		}
	}
	if !headless {
		t.Errorf("serviceName %q is not a headless Service (clusterIP: None) with publishNotReadyAddresses", spec.ServiceName)
	}
	if sc := spec.Template.Spec.SecurityContext; !sc.RunAsNonRoot || sc.RunAsUser == 0 {
		t.Errorf("pod securityContext %+v, want runAsNonRoot and a non-zero runAsUser", sc)
	}
	if len(c.Command) > 0 && c.Command[0] != imageSeatd {
		t.Errorf("container command %q, want the image's entrypoint %s or none", c.Command, imageSeatd)
	}
	where := m.file + ": container seatd"
	given := mustServe(t, where, serveArgs(t, where, c.Args), serveFlags(t))
	checkPeers(t, where, m.Metadata.Name, ss, given)
	checkProbes(t, where, c, given["http"])
	checkMounts(t, where, ss, c, given)
}

// checkPeers checks that --peers names every pod of the StatefulSet by its
// stable DNS name (POD.SERVICE...), with the ports --raft and --grpc listen
// on, and that --id is the pod's name.
func checkPeers(t *testing.T, where, name string, ss statefulSet, given map[string]string) {
	t.Helper()
	if given["id"] != "$(POD_NAME)" {
		t.Errorf("%s: --id=%s, want $(POD_NAME): the node id is the pod's stable name", where, given["id"])
	}
	_, raftPort, _ := net.SplitHostPort(given["raft"])
	_, grpcPort, _ := net.SplitHostPort(given["grpc"])
	peers := strings.Split(given["peers"], ",")
	if len(peers) != ss.Spec.Replicas {
		t.Errorf("%s: --peers names %d nodes, want one per replica (%d)", where, len(peers), ss.Spec.Replicas)
	}
	for i, p := range peers {
		pod := fmt.Sprintf("%s-%d", name, i)
		host := pod + "." + ss.Spec.ServiceName + "."
		id, addrs, _ := strings.Cut(p, "=")
		raftAddr, grpcAddr, _ := strings.Cut(addrs, "/")
		if id != pod || !strings.HasPrefix(raftAddr, host) || !strings.HasPrefix(grpcAddr, host) ||
			!strings.HasSuffix(raftAddr, ":"+raftPort) || !strings.HasSuffix(grpcAddr, ":"+grpcPort) {
			t.Errorf("%s: --peers entry %q, want %s=%s...:%s/%s...:%s", where, p, pod, host, raftPort, host, grpcPort)
		}
	}
}

// checkProbes checks readiness on /readyz and liveness on /healthz, both on
// the container port --http listens on.
func checkProbes(t *testing.T, where string, c container, httpAddr string) {
	t.Helper()
	_, port, err := net.SplitHostPort(httpAddr)
	if err != nil {
		t.Fatalf("%s: --http=%q: %v", where, httpAddr, err)
	}
	httpPorts := []string{port}
	for _, p := range c.Ports {
		if fmt.Sprint(p.ContainerPort) == port {
			httpPorts = append(httpPorts, p.Name)
		}
	}
	for _, tc := range []struct {
		kind string
		p    *probe
		path string
	}{{"readinessProbe", c.ReadinessProbe, "/readyz"}, {"livenessProbe", c.LivenessProbe, "/healthz"}} {
		switch {
		case tc.p == nil || tc.p.HTTPGet == nil:
			t.Errorf("%s: no %s httpGet", where, tc.kind)
		case tc.p.HTTPGet.Path != tc.path || !slices.Contains(httpPorts, tc.p.HTTPGet.Port):
			t.Errorf("%s: %s GET %s on port %s, want %s on %v (--http)", where, tc.kind, tc.p.HTTPGet.Path, tc.p.HTTPGet.Port, tc.path, httpPorts)
		}
	}
}

// checkMounts checks that --data-dir is the image's volume, mounted from a
// PersistentVolumeClaim, and that the admin token and the ticket key are
// files of a volume made of Secrets.
func checkMounts(t *testing.T, where string, ss statefulSet, c container, given map[string]string) {
	t.Helper()
	mountOf := func(path string) (string, bool) {
		for _, vm := range c.VolumeMounts {
			if path == vm.MountPath || strings.HasPrefix(path, strings.TrimSuffix(vm.MountPath, "/")+"/") {
				return vm.Name, true
			}
		}
		return "", false
	}
	if given["data-dir"] != imageDataDir {
		t.Errorf("%s: --data-dir=%s, want the image's volume %s", where, given["data-dir"], imageDataDir)
	}
	claim, _ := mountOf(given["data-dir"])
	if !slices.ContainsFunc(ss.Spec.VolumeClaimTemplates, func(v claimTemplate) bool { return v.Metadata.Name == claim }) {
		t.Errorf("%s: --data-dir %s is not on a volumeClaimTemplate (mounted volume %q)", where, given["data-dir"], claim)
	}
	for _, flag := range []string{"admin-token-file", "ticket-key"} {
		name, ok := mountOf(given[flag])
		i := slices.IndexFunc(ss.Spec.Template.Spec.Volumes, func(v volume) bool { return v.Name == name })
		if !ok || i < 0 || !secretVolume(ss.Spec.Template.Spec.Volumes[i]) {
			t.Errorf("%s: --%s=%s is not in a volume made of Secrets", where, flag, given[flag])
		}
	}
}

// secretVolume reports whether every source of v is a Secret.
func secretVolume(v volume) bool {
	if v.Secret != nil {
		return v.Secret.SecretName != ""
	}
	if v.Projected == nil || len(v.Projected.Sources) == 0 {
		return false
	}
	for _, s := range v.Projected.Sources {
		if s.Secret == nil || s.Secret.Name == "" {
			return false
		}
	}
	return true
}

func TestPodDisruptionBudget(t *testing.T) {
	ms := readManifests(t)
	_, ss, _ := seatdPods(t, ms)
	pdbs := ofKind(ms, "PodDisruptionBudget")
	if len(pdbs) != 1 {
		t.Fatalf("%d PodDisruptionBudgets, want 1", len(pdbs))
	}
	var pdb podDisruptionBudget
	pdbs[0].decode(t, &pdb)
	if !selects(pdb.Spec.Selector.MatchLabels, ss.Spec.Template.Metadata.Labels) {
		t.Errorf("PodDisruptionBudget selector %v does not match the seatd pods %v", pdb.Spec.Selector.MatchLabels, ss.Spec.Template.Metadata.Labels)
	}
	quorum := ss.Spec.Replicas/2 + 1
	switch s := pdb.Spec; {
	case s.MaxUnavailable != nil && ss.Spec.Replicas-*s.MaxUnavailable < quorum,
		s.MinAvailable != nil && *s.MinAvailable < quorum,
		s.MaxUnavailable == nil && s.MinAvailable == nil:
		t.Errorf("PodDisruptionBudget %+v does not keep a quorum of %d of %d pods", s, quorum, ss.Spec.Replicas)
	}
}

func TestServicesSelectSeatdPods(t *testing.T) {
	ms := readManifests(t)
	_, ss, c := seatdPods(t, ms)
	for _, sm := range ofKind(ms, "Service") {
		var s service
		sm.decode(t, &s)
		if !selects(s.Spec.Selector, ss.Spec.Template.Metadata.Labels) {
			t.Errorf("Service %s selects %v, not the seatd pods %v", sm.Metadata.Name, s.Spec.Selector, ss.Spec.Template.Metadata.Labels)
		}
		for _, p := range s.Spec.Ports {
			if !slices.ContainsFunc(c.Ports, func(cp containerPort) bool {
				return cp.Name == p.TargetPort || fmt.Sprint(cp.ContainerPort) == p.TargetPort
			}) {
				t.Errorf("Service %s port %s targets %q, which the seatd container does not expose", sm.Metadata.Name, p.Name, p.TargetPort)
			}
		}
	}
}
