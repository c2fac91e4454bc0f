package sysinfo

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestServiceNameOf(t *testing.T) {
	for _, c := range []struct {
		env  []string
		want string
	}{
		{[]string{"PATH=/bin", "OTEL_SERVICE_NAME=checkout"}, "checkout"},
		{[]string{"OTEL_RESOURCE_ATTRIBUTES=deployment.environment=prod,service.name=cart%20api"}, "cart api"},
		// the explicit name wins over the attributes, as in the SDKs
		{[]string{"OTEL_RESOURCE_ATTRIBUTES=service.name=a", "OTEL_SERVICE_NAME=b"}, "b"},
		{[]string{"OTEL_SERVICE_NAME=", "OTEL_RESOURCE_ATTRIBUTES=service.name=c"}, "c"},
		{[]string{"OTEL_RESOURCE_ATTRIBUTES=service.namespace=x"}, ""},
		{[]string{"OTEL_RESOURCE_ATTRIBUTES=service.name=%zz"}, ""}, // not percent-encoding
		{nil, ""},
	} {
		if got := serviceNameOf(c.env); got != c.want {
			t.Errorf("serviceNameOf(%q) = %q, want %q", c.env, got, c.want)
		}
	}
}

// A live process's environment, read from /proc; a gone one's, nothing.
func TestServiceNameOfProcess(t *testing.T) {
	cmd := exec.Command("sleep", "5")
	cmd.Env = append(os.Environ(), "OTEL_SERVICE_NAME=sleeper")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	var got string
	for range 50 { // the exec has happened once the environment is the new image's
		if got = Host.ServiceName(uint32(cmd.Process.Pid)); got != "" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got != "sleeper" {
		t.Errorf("ServiceName of a live process = %q, want sleeper", got)
	}
	if got := Host.ServiceName(1 << 30); got != "" {
		t.Errorf("ServiceName of no process = %q", got)
	}
}
