package cidata

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// HashLen is the number of hex digits of Hash, as in the provisioning
// hash block (design §4: sha256, first 12 hex).
const HashLen = 12

// Hash is the short content hash of an image: the first HashLen hex
// digits of its SHA-256. It hashes the image, not the Seed, so a volume's
// name always names the exact bytes stored under it.
func Hash(image []byte) string {
	sum := sha256.Sum256(image)
	return hex.EncodeToString(sum[:])[:HashLen]
}

// VolumeName is the file name an image is uploaded as: "<name>-<hash>.iso".
// name must already be what PVE keeps: pve-storage's
// normalize_content_filename (src/PVE/Storage.pm) turns every character
// but A-Z a-z 0-9 _ . - into "_", and the upload API wants .iso or .img
// (src/PVE/API2/Storage/Status.pm, upload).
func VolumeName(name string, image []byte) (string, error) {
	if err := validVolumeBase(name); err != nil {
		return "", err
	}
	return name + "-" + Hash(image) + ".iso", nil
}

func validVolumeBase(name string) error {
	if name == "" {
		return fmt.Errorf("config drive name is empty")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return fmt.Errorf("config drive name %q: character %q is not one of A-Z a-z 0-9 _ . - (PVE would rename the file)", name, c)
		}
	}
	return nil
}

// ParseVolumeName reports whether filename is a version of the config
// drive name, as VolumeName writes it, and returns that version's hash.
// A planner lists the storage's ISO volumes with it to find the versions
// of a drive: the current one and those no VM uses any more.
func ParseVolumeName(name, filename string) (hash string, ok bool) {
	rest, found := strings.CutPrefix(filename, name+"-")
	if !found {
		return "", false
	}
	hash, found = strings.CutSuffix(rest, ".iso")
	if !found || len(hash) != HashLen {
		return "", false
	}
	for i := 0; i < len(hash); i++ {
		if c := hash[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return "", false
		}
	}
	return hash, true
}
