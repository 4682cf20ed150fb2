package spec

import "strings"

// fwMacros are PVE's firewall macro names, in PVE's spelling (pve-firewall
// src/PVE/Firewall.pm $pve_fw_macros and $pve_ipv6fw_macros; verify_rule
// takes any case and stores this one).
var fwMacros = []string{
	"Amanda", "Auth", "BGP", "BitTorrent", "BitTorrent32", "CVS", "Ceph", "Citrix", "DAAP", "DCC",
	"DHCPfwd", "DHCPv6", "DNS", "Distcc", "FTP", "Finger", "GNUnet", "GRE", "Git", "HKP", "HTTP",
	"HTTPS", "ICPV2", "ICQ", "IMAP", "IMAPS", "IPIP", "IPsec", "IPsecah", "IPsecnat", "IRC",
	"Jetdirect", "L2TP", "LDAP", "LDAPS", "MDNS", "MSNP", "MSSQL", "Mail", "Munin", "MySQL", "NNTP",
	"NNTPS", "NTP", "NeighborDiscovery", "OSPF", "OpenVPN", "PCA", "PMG", "POP3", "POP3S", "PPtP",
	"Ping", "PostgreSQL", "Printer", "RDP", "RIP", "RNDC", "Razor", "Rdate", "Rsync", "SANE", "SMB",
	"SMBswat", "SMTP", "SMTPS", "SNMP", "SPAMD", "SPICEproxy", "SSH", "SVN", "SixXS", "Squid",
	"Submission", "Syslog", "TFTP", "Telnet", "Telnets", "Time", "Trcrt", "VNC", "VNCL", "Web",
	"Webcache", "Webmin", "Whois",
}

// macroName is a macro's name as PVE stores it, and whether PVE has it.
func macroName(s string) (string, bool) {
	for _, m := range fwMacros {
		if strings.EqualFold(m, s) {
			return m, true
		}
	}
	return "", false
}
