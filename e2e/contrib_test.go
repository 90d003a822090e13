package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// k8sJobSpec holds the fields of a batch/v1 JobSpec the manifests rely on.
type k8sJobSpec struct {
	CompletionMode string `yaml:"completionMode"`
	Completions    *int   `yaml:"completions"`
	Parallelism    *int   `yaml:"parallelism"`
	Template       struct {
		Spec struct {
			RestartPolicy string `yaml:"restartPolicy"`
			Containers    []struct {
				Name         string   `yaml:"name"`
				Image        string   `yaml:"image"`
				Command      []string `yaml:"command"`
				VolumeMounts []struct {
					Name      string `yaml:"name"`
					MountPath string `yaml:"mountPath"`
				} `yaml:"volumeMounts"`
			} `yaml:"containers"`
			Volumes []struct {
				Name string `yaml:"name"`
			} `yaml:"volumes"`
		} `yaml:"spec"`
	} `yaml:"template"`
}

type k8sObject struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		k8sJobSpec  `yaml:",inline"`
		Schedule    string `yaml:"schedule"`
		JobTemplate struct {
			Spec k8sJobSpec `yaml:"spec"`
		} `yaml:"jobTemplate"`
	} `yaml:"spec"`
}

var dns1123 = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// checkJobSpec validates what the Job API requires of an Indexed Job and
// returns its shell command line and its shard count.
func checkJobSpec(t *testing.T, name string, s k8sJobSpec) (string, int) {
	t.Helper()
	if s.CompletionMode != "Indexed" || s.Completions == nil || *s.Completions < 1 {
		t.Fatalf("%s: want an Indexed Job with completions, got %q %v", name, s.CompletionMode, s.Completions)
	}
	if s.Parallelism != nil && *s.Parallelism > *s.Completions {
		t.Errorf("%s: parallelism %d > completions %d", name, *s.Parallelism, *s.Completions)
	}
	pod := s.Template.Spec
	if pod.RestartPolicy != "Never" && pod.RestartPolicy != "OnFailure" {
		t.Errorf("%s: a Job's restartPolicy must be Never or OnFailure, not %q", name, pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%s: %d containers", name, len(pod.Containers))
	}
	c := pod.Containers[0]
	if !dns1123.MatchString(c.Name) || c.Image == "" || len(c.Command) != 3 || c.Command[0] != "/bin/sh" || c.Command[1] != "-c" {
		t.Fatalf("%s: container %+v", name, c)
	}
	vols := map[string]bool{}
	for _, v := range pod.Volumes {
		vols[v.Name] = true
	}
	for _, m := range c.VolumeMounts {
		if !vols[m.Name] || m.MountPath != "/images" {
			t.Errorf("%s: mount %+v has no volume or is not /images", name, m)
		}
	}
	n := 0
	if _, err := fmt.Sscanf(regexp.MustCompile(`--shard auto/\d+`).FindString(c.Command[2]), "--shard auto/%d", &n); err != nil || n != *s.Completions {
		t.Errorf("%s: --shard auto/%d in %q, want auto/%d (completions)", name, n, c.Command[2], *s.Completions)
	}
	return c.Command[2], n
}

// runShards runs script as each pod would (JOB_COMPLETION_INDEX 0..n-1,
// /images being dir), each pod to exit 0, and returns how often each set
// was reported.
func runShards(t *testing.T, dir, script string, n int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	script = strings.ReplaceAll(script, "/images", dir)
	for i := 0; i < n; i++ {
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Env = append(os.Environ(), "PATH="+binDir+":"+os.Getenv("PATH"), fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i))
		r := runCmd(t, cmd)
		if r.code != 0 {
			t.Errorf("pod %d: exit %d\n%s", i, r.code, r.stderr)
		}
		for _, l := range jsonLines(t, r.stdout) {
			seen[l.Path]++
		}
	}
	return seen
}

// TestContribManifests: the Kubernetes manifest parses as YAML, has the
// fields the Job API requires of an Indexed Job (and a CronJob), and its
// command lines, run locally for every index, report every set exactly
// once; the systemd units have their sections and their ExecStart runs.
func TestContribManifests(t *testing.T) {
	b, err := os.ReadFile("../contrib/kubernetes/ddfs-batch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var want []string
	for i := 0; i < 12; i++ {
		name := fmt.Sprintf("%s/i%02d.img", dir, i)
		must(t, run(t, dir, "mkfs.ddfs", "-q", "-b", "64M", name), 0)
		want = append(want, name)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	kinds := ""
	for {
		var o k8sObject
		if err := dec.Decode(&o); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("yaml: %v", err)
		}
		if o.APIVersion != "batch/v1" || !dns1123.MatchString(o.Metadata.Name) {
			t.Fatalf("object %q %q", o.APIVersion, o.Metadata.Name)
		}
		spec := o.Spec.k8sJobSpec
		switch o.Kind {
		case "Job":
		case "CronJob":
			if len(strings.Fields(o.Spec.Schedule)) != 5 {
				t.Errorf("CronJob schedule %q", o.Spec.Schedule)
			}
			spec = o.Spec.JobTemplate.Spec
		default:
			t.Fatalf("kind %q", o.Kind)
		}
		kinds += o.Kind + " "
		script, n := checkJobSpec(t, o.Metadata.Name, spec)
		seen := runShards(t, dir, script, n)
		if empty := runShards(t, t.TempDir(), script, n); len(empty) != 0 {
			t.Errorf("%s on an empty volume: %v", o.Metadata.Name, empty)
		}
		for _, p := range want {
			if seen[p] != 1 {
				t.Errorf("%s: %s reported by %d pods", o.Metadata.Name, p, seen[p])
			}
		}
		if len(seen) != len(want) {
			t.Errorf("%s: %d sets reported, want %d", o.Metadata.Name, len(seen), len(want))
		}
	}
	if kinds != "Job CronJob " {
		t.Fatalf("kinds %q", kinds)
	}
	checkUnits(t, dir, len(want))
	verifyUnits(t, dir)
}

// verifyUnits runs systemd-analyze verify over the units, as templates
// and as instances for dir (%f resolved; systemd-escape ships with it),
// when the machine has it. It
// exits 0 on many a bad setting ("Failed to parse service type,
// ignoring"), so any line naming one of the units fails the test; lines
// about other units of the machine do not.
func verifyUnits(t *testing.T, dir string) {
	t.Helper()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Log("systemd-analyze not found: the units' systemd verify is skipped")
		return
	}
	units := t.TempDir()
	names, _ := filepath.Glob("../contrib/systemd/*@.*")
	if len(names) != 3 {
		t.Fatalf("units %v", names)
	}
	esc := runCmd(t, exec.Command("systemd-escape", "-p", dir))
	inst := strings.TrimSpace(esc.stdout)
	if esc.code != 0 || inst == "" {
		t.Fatalf("systemd-escape -p %s: exit %d %s", dir, esc.code, esc.stderr)
	}
	var args []string
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		base := filepath.Base(n)
		if err := os.WriteFile(filepath.Join(units, base), b, 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, filepath.Join(units, base), filepath.Join(units, strings.Replace(base, "@.", "@"+inst+".", 1)))
	}
	r := runCmd(t, exec.Command("systemd-analyze", append([]string{"verify", "--man=no"}, args...)...))
	for _, l := range strings.Split(r.stdout+r.stderr, "\n") {
		if strings.Contains(l, units) || strings.Contains(l, "@"+inst+".") {
			t.Errorf("systemd-analyze verify: %s", l)
		}
	}
	if r.code != 0 {
		t.Errorf("systemd-analyze verify: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// checkUnits parses the systemd units (sections, keys) and runs each
// service's ExecStart on dir as systemd would for instance %f = dir.
func checkUnits(t *testing.T, dir string, sets int) {
	t.Helper()
	need := map[string][]string{
		"trimtool@.service":  {"Unit.Description", "Service.Type", "Service.ExecStart"},
		"trimtool@.timer":    {"Unit.Description", "Timer.OnCalendar", "Install.WantedBy"},
		"fsck.ddfs@.service": {"Unit.Description", "Service.Type", "Service.ExecStart"},
	}
	for name, keys := range need {
		f, err := os.Open(filepath.Join("../contrib/systemd", name))
		if err != nil {
			t.Fatal(err)
		}
		unit, section := map[string]string{}, ""
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			l := strings.TrimSpace(sc.Text())
			switch {
			case l == "" || l[0] == '#':
			case l[0] == '[' && l[len(l)-1] == ']':
				section = l[1 : len(l)-1]
			case strings.Contains(l, "=") && section != "":
				k, v, _ := strings.Cut(l, "=")
				unit[section+"."+k] = v
			default:
				t.Errorf("%s: line %q", name, l)
			}
		}
		f.Close()
		for _, k := range keys {
			if unit[k] == "" {
				t.Errorf("%s: no %s", name, k)
			}
		}
		start := unit["Service.ExecStart"]
		if start == "" {
			continue
		}
		// /bin/sh -c 'SCRIPT' sh %f
		i, j := strings.Index(start, "'"), strings.LastIndex(start, "'")
		if !strings.HasPrefix(start, "/bin/sh -c '") || j <= i || strings.TrimSpace(start[j+1:]) != "sh %f" {
			t.Fatalf("%s: ExecStart %q", name, start)
		}
		script := strings.ReplaceAll(start[i+1:j], "/usr/local/bin/", binDir+"/")
		r := runCmd(t, exec.Command("/bin/sh", "-c", script, "sh", dir))
		got := strings.Count(r.stdout, "\n")
		if r.code != 0 || got < sets {
			t.Errorf("%s: exit %d, %d lines for %d sets\n%s%s", name, r.code, got, sets, r.stdout, r.stderr)
		}
		// A folder with no images yet is nothing to do, not a failed unit.
		if r := runCmd(t, exec.Command("/bin/sh", "-c", script, "sh", t.TempDir())); r.code != 0 {
			t.Errorf("%s on an empty folder: exit %d\n%s", name, r.code, r.stderr)
		}
	}
}
