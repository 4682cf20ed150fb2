// Package provisiontest gives provisioning tests real things to talk to:
// an OpenSSH sshd of their own on 127.0.0.x with a generated host key and
// client key, a `cloud-init` on the login's PATH that answers as told, a
// DNS server and an ssh-agent on loopback, and Require, which skips a test
// whose tool is missing — or fails it when PVECTL_REQUIRE_TOOLS=1 (CI).
package provisiontest
