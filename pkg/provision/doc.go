// Package provision runs a guest's provisioning files (Ansible playbooks,
// Puppet manifests) over SSH and remembers, in the guest's own description,
// which versions ran and which SSH host key the guest has: no state file.
//
// The planner calls Pending at plan time (pure: it reads the description
// and the files' hashes, never the network) and Run at apply time:
// address (Lookup: static IP, DNS asked directly, guest agent) → one TCP
// connection that is the SSH probe and login, its host key checked
// against the pin → `cloud-init status` until done → each pending file in
// list order, its hash saved through Options.SaveDescription as soon as it
// exits 0. Every wait shares one deadline (Options.Timeout) and ends in a
// *WaitError naming the VM, the address and the last error. LoadAuth finds
// the key, ResolveUser the login; CheckName is validate's offline check.
//
// # Description blocks
//
// pvectl keeps two blocks in a guest's description, each on its own line,
// each replaced where it stands (the text around them is the user's, kept
// byte for byte) or appended when absent:
//
//	block     = provision | hostkey
//	provision = "[pvectl-provision: " entry *( "," entry ) "]"
//	entry     = name "=" hash
//	name      = 1*( any character but "," "=" "]" and line breaks )  ; the file as the spec names it
//	hash      = 12( %x30-39 / %x61-66 )                              ; lowercase hex
//	hostkey   = "[pvectl-hostkey: " keytype " " fingerprint "]"
//	keytype   = the SSH key type, e.g. "ssh-ed25519", "ecdsa-sha2-nistp256", "ssh-rsa"
//	fingerprint = "SHA256:" 43( base64 character )                   ; as ssh-keygen -l prints it
//
// Both fit the shape "[pvectl-<word>: …]" that pkg/planner leaves out of
// description comparisons. The legacy block "[puls-provision: name=hash,…]"
// (hashes of 8 to 64 hex digits, compared as a prefix of the file's digest
// or of its bytes' SHA-256) is read when no pvectl-provision block is
// present, honoured, and replaced by one at the next write (one it cannot
// read records nothing). A malformed pvectl block is an error. An entry is
// written only after its file ran with exit status 0; entries of files no
// longer listed are dropped then. The whole description must stay within
// MaxDescription (8192 characters, PVE's limit).
//
// # Hashes
//
// A file's hash is the first 12 hex digits of a SHA-256: of its bytes; for
// a playbook with a roles/ directory beside it, of a manifest of the
// playbook's SHA-256 and every entry under roles/ in lexical order (files
// by their content's SHA-256, symlinks by their target), so editing a role
// reruns the playbooks next to it.
//
// # Host keys
//
// The first connection pins the key it sees (trust on first use) and the
// pin is saved before anything runs. Later, a different key fails closed
// with a *HostKeyError naming both fingerprints, unless
// Target.AcceptNewHostKey says the guest is new in this run (or the user
// asked to re-pin). ansible-playbook gets a known_hosts file holding exactly
// the verified key, with strict checking, and signs through pvectl's
// in-process ssh-agent (agent.go): the private key is never written to
// disk. Run's temp directory (pvectl-provision-PID-*, 0700) is removed
// afterwards, and a dead process's by the next Run. ansible-playbook's
// environment is an allow-list (env.go), never pvectl's secrets.
package provision
