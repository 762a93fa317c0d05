#!/bin/bash
# loads.sh LANG — prints, one a line and sorted, what LANG's interpreter loads here: python (the
# standard library and every installed distribution's top-level modules), php (php -m), perl (its
# core modules and Debian's), ruby (the standard library and installed gems' top-level files), node
# (its builtins). Run bare and inside a sandbox, the two lists say what the sandbox takes away
# (tests/integration/parity.sh compares them; limits names the differences kept on purpose).
set -euo pipefail
export PATH=/usr/local/bin:/usr/bin:/bin LC_ALL=C.UTF-8
cd "${TMPDIR:-/tmp}"
case "${1:-}" in
python)
	python3 - <<'PY' | sort
import contextlib, importlib, importlib.metadata as md, io, os, sys
# Side effects at import (a browser, a greeting, a GUI demo) or not modules to load.
skip = {"antigravity", "this", "idlelib", "turtledemo", "__hello__", "__phello__"}
names = {n for n in sys.stdlib_module_names if not n.startswith("_")}
names |= {t for t in md.packages_distributions() if not t.startswith("_") and t.isidentifier()}
for n in sorted(names - skip):
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            importlib.import_module(n)
    except BaseException:
        continue
    os.write(1, (n + "\n").encode())
PY
	;;
php)
	php -m | grep -v '^$' | sort -u
	;;
perl)
	perl - <<'PL' | sort
use strict; use warnings;
use Module::CoreList;
my %m = map { $_ => 1 } keys %{$Module::CoreList::version{$]}};
for my $d (@INC) {
	next unless $d =~ m{^/usr/(?:share|lib)/\S*perl5$} && -d $d;
	open(my $f, "-|", "find", $d, "-name", "*.pm") or next;
	while (<$f>) { chomp; s{^\Q$d\E/}{}; s{\.pm$}{}; s{/}{::}g; $m{$_} = 1 }
}
# The debugger's, CPAN's shell and other systems' modules are not libraries to load.
my @names = grep { !/^(?:DB$|perl5db|CPAN|Devel::|Win32|VMS|OS2|Mac)/ } sort keys %m;
# Loaded in a child, one after another; a module that ends its process (exit, exec, a crash)
# counts as not loading, and a new child goes on with the next.
my $i = 0;
while ($i < @names) {
	pipe(my $r, my $w) or die;
	my $pid = fork() // die;
	if (!$pid) {
		close $r; select((select($w), $| = 1)[0]);
		open STDOUT, ">", "/dev/null"; open STDERR, ">", "/dev/null"; open STDIN, "<", "/dev/null";
		$SIG{ALRM} = sub { die "timeout\n" };
		for my $k ($i .. $#names) {
			print $w "? $k\n";
			alarm 10;
			my $ok = eval "require $names[$k]; 1";
			alarm 0;
			print $w ($ok ? "+" : "-") . " $k\n";
		}
		exit 0;
	}
	close $w;
	my $at = $i;
	while (my $l = <$r>) {
		my ($s, $k) = split ' ', $l;
		$at = $k;
		print "$names[$k]\n" if $s eq "+";
		$i = $k + 1 if $s ne "?";
	}
	waitpid($pid, 0);
	$i = $at + 1 if $i <= $at;
}
PL
	;;
ruby)
	ruby - <<'RB' | sort
require "rbconfig"
names = []
[RbConfig::CONFIG["rubylibdir"], RbConfig::CONFIG["rubyarchdir"]].each do |d|
  Dir.glob(File.join(d, "*.{rb,so}")).each { |f| names << File.basename(f).sub(/\.(rb|so)\z/, "") }
end
Gem::Specification.each do |s|
  s.require_paths.each { |p| Dir.glob(File.join(s.full_gem_path, p, "*.rb")).each { |f| names << File.basename(f, ".rb") } }
end
# Each of these does its work when loaded or at exit (a debugger, a profiler, mkmf.log, un's CLI).
names = names.uniq.sort - %w[debug profile profiler mkmf un]
out = $stdout.dup
$stdout.reopen(File::NULL); $stderr.reopen(File::NULL); $stdin.reopen(File::NULL)
names.each do |n|
  begin
    require n
    out.puts n
  rescue Exception
  end
end
out.flush
exit!(0)
RB
	;;
node)
	node -e 'const m = require("module");
for (const n of m.builtinModules.filter((n) => !n.startsWith("_")).sort()) {
	try { require(n); console.log(n); } catch (e) {}
}' 2>/dev/null | sort
	;;
*)
	echo "usage: loads.sh python|php|perl|ruby|node" >&2
	exit 2
	;;
esac
