package schema

import "testing"

func TestParseSize(t *testing.T) {
	tests := map[string]int64{
		"4096": 4096, "32G": 32 << 30, "512M": 512 << 20, "1.5T": 3 << 39, "8GiB": 8 << 30, "1K": 1024, "0.5K": 512,
	}
	for s, want := range tests {
		if got, ok := ParseSize(s); !ok || got != want {
			t.Errorf("ParseSize(%q) = %d, %v want %d", s, got, ok, want)
		}
	}
	for _, bad := range []string{"", "G", "-1G", "+8G", "1P", "1 G", "1GB"} {
		if _, ok := ParseSize(bad); ok {
			t.Errorf("ParseSize(%q): want not ok", bad)
		}
	}
}

func TestFormatSize(t *testing.T) {
	tests := map[int64]string{32 << 30: "32G", 512 << 20: "512M", 1536 << 20: "1536M", 4 << 40: "4T", 1000: "1000", 1024: "1K"}
	for b, want := range tests {
		if got := FormatSize(b); got != want {
			t.Errorf("FormatSize(%d) = %q want %q", b, got, want)
		}
	}
}
