// Compiler mode with real g++: `kbuild cc -- COMPILER ARGS...` and kbuild
// started through a link named g++ run the compiler's own command (its
// words unchanged) through kbuild's output cache; what kbuild cannot treat
// as one build runs as it is.
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "../support/test_support.hpp"

using namespace kbuild_test;

namespace {

struct CcCase {
  TempDir home, dir;
  std::string real_dir = dir / "real", count = dir / "compiler-runs";
  CcCase() {
    // A g++ that counts its runs (not kbuild's questions about its search
    // dirs, asked when a build is stored), then is g++.
    write_file(dir / "real/g++",
               "#!/bin/sh\ncase \"$*\" in *-print-search-dirs*|*\"-E -v -x c++ /dev/null\"*) ;; "
               "*) echo \"$*\" >> \"" +
                   count + "\";; esac\nexec /usr/bin/g++ \"$@\"\n",
               true);
    write_file(dir / "k.cpp", "extern \"C\" int f() { return 41 + X; }\n");
  }
  std::map<std::string, std::string> env() const {
    return {{"PATH", real_dir + ":/usr/bin:/bin"}, {"KBUILD_VERBOSE", "1"}};
  }
  int runs() const {
    std::string text = fs::exists(count) ? read_file(count) : "";
    return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  }
  // A directory holding a link named `name` to kbuild (as ccache is set up).
  std::string masquerade(const std::string& name) {
    fs::create_directories(dir / "masq");
    fs::create_symlink(kbuild_binary(), dir / ("masq/" + name));
    return dir / ("masq/" + name);
  }
};

// KBUILD_LOG's lines, each parsed as the JSON object it must be.
std::vector<nlohmann::json> cc_log_lines(const std::string& log) {
  std::vector<nlohmann::json> lines;
  std::istringstream text(read_file(log));
  for (std::string line; std::getline(text, line);) {
    INFO(line);
    nlohmann::json j = nlohmann::json::parse(line);  // throws: not JSON
    REQUIRE(j.is_object());
    lines.push_back(std::move(j));
  }
  return lines;
}

bool cc_hit(const RunResult& r) {
  return r.err.find("cache: hit") != std::string::npos;
}

}  // namespace

TEST_CASE("kbuild cc runs the command as given and the second time from the cache", "[e2e][cc]") {
  CcCase c;
  std::vector<std::string> cmd{"cc",      "--",    "g++", c.dir / "k.cpp", "-DX=1", "-O2",
                               "-shared", "-fPIC", "-o",  c.dir / "k.so"};
  RunResult first = run_kbuild(cmd, c.home.str(), c.env());
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(c.runs() == 1);
  // The compiler got the words as given (kbuild adds only what lists the
  // files it read), writing into kbuild's private directory.
  std::string ran = read_file(c.count);
  CHECK(ran.rfind(c.dir / "k.cpp -DX=1 -O2 -shared -fPIC -o ", 0) == 0);
  std::string bytes = read_file(c.dir / "k.so");
  fs::remove(c.dir / "k.so");
  RunResult second = run_kbuild(cmd, c.home.str(), c.env());
  INFO(second.err);
  REQUIRE(second.exit_code == 0);
  CHECK(cc_hit(second));
  CHECK(c.runs() == 1);
  CHECK(read_file(c.dir / "k.so") == bytes);
  // -v says what ran: the compiler on the miss, nothing on the hit.
  CHECK(first.err.find("kbuild: info: ran: ") != std::string::npos);
  CHECK(second.err.find("kbuild: info: ran: ") == std::string::npos);
  CHECK(second.err.find("running: ") == std::string::npos);
  CHECK(second.err.find("no compiler ran") != std::string::npos);
  // Another flag is another build.
  cmd[4] = "-DX=2";
  REQUIRE(run_kbuild(cmd, c.home.str(), c.env()).exit_code == 0);
  CHECK(c.runs() == 2);
}

TEST_CASE("kbuild started as g++ finds the real g++ after itself and caches compiles",
          "[e2e][cc]") {
  CcCase c;
  std::string gxx = c.masquerade("g++");
  auto env = c.env();
  env["PATH"] = (c.dir / "masq") + ":" + env["PATH"];  // the link first, as ccache's
  std::vector<std::string> cmd{gxx, "-c", c.dir / "k.cpp", "-DX=1", "-fPIC", "-o", c.dir / "k.o"};
  RunResult first = run(cmd, env);
  INFO(first.err);
  REQUIRE(first.exit_code == 0);
  CHECK(c.runs() == 1);
  RunResult second = run(cmd, env);
  REQUIRE(second.exit_code == 0);
  CHECK(cc_hit(second));
  CHECK(c.runs() == 1);
  // What is not one build runs as it is: its output and exit code are g++'s.
  RunResult version = run({gxx, "--version"}, env);
  CHECK(version.exit_code == 0);
  CHECK(version.out == run({"/usr/bin/g++", "--version"}).out);
  CHECK(c.runs() == 2);
  // Assembly is cached: the assembler is seen to read what it .incbin's.
  write_file(c.dir / "blob.S", ".section .rodata\n.incbin \"" + c.dir / "k.cpp" + "\"\n");
  for (int i = 0; i < 2; ++i)
    REQUIRE(run({gxx, "-c", c.dir / "blob.S", "-o", c.dir / "blob.o"}, env).exit_code == 0);
  CHECK(c.runs() == 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a later mtime
  write_file(c.dir / "k.cpp", "extern \"C\" int f() { return 42 + X; }\n");
  REQUIRE(run({gxx, "-c", c.dir / "blob.S", "-o", c.dir / "blob.o"}, env).exit_code == 0);
  CHECK(c.runs() == 4);
  RunResult bad = run({gxx, c.dir / "missing.cpp"}, env);
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("kbuild: error") == std::string::npos);
}

TEST_CASE(
    "kbuild cc: a compile error shows g++'s diagnostics, exits as g++ and keeps the earlier output",
    "[e2e][cc]") {
  CcCase c;
  write_file(c.dir / "bad.cpp", "int f() { return undeclared_name; }\n");
  write_file(c.dir / "k.o", "earlier");
  RunResult r = run_kbuild({"cc", "--", "g++", "-c", c.dir / "bad.cpp", "-o", c.dir / "k.o"},
                           c.home.str(), c.env());
  CHECK(r.exit_code == 1);  // g++'s own, as without kbuild
  CHECK(r.err.find("undeclared_name") != std::string::npos);
  CHECK(r.err.find("kbuild: error") == std::string::npos);
  CHECK(r.err.find("kbuild: info: compile failed") != std::string::npos);  // KBUILD_VERBOSE=1
  CHECK(read_file(c.dir / "k.o") == "earlier");
}

TEST_CASE("kbuild cc runs the compiler behind KBUILD_LAUNCHER", "[e2e][cc]") {
  CcCase c;
  std::string log = c.dir / "launched";
  write_file(c.dir / "launcher/wrap", "#!/bin/sh\necho \"$1\" >> \"" + log + "\"\nexec \"$@\"\n",
             true);
  auto env = c.env();
  env["KBUILD_LAUNCHER"] = c.dir / "launcher/wrap";
  RunResult r = run_kbuild({"cc", "--", "g++", "-c", c.dir / "k.cpp", "-DX=1", "-o", c.dir / "k.o"},
                           c.home.str(), env);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // The compile went through the launcher, which got the real compiler.
  CHECK(read_file(log).find(c.real_dir + "/g++\n") != std::string::npos);
  CHECK(c.runs() == 1);
  CHECK(fs::is_regular_file(c.dir / "k.o"));
}

TEST_CASE("kbuild cc caches precompiled headers: Inductor's run in an emptied dir hits",
          "[e2e][cc]") {
  CcCase c;
  // Inductor's sequence: its prefix header built with -x c++-header into a
  // .gch, then a kernel compiled with -include of it. Each run starts in an
  // emptied directory (the same paths), with one kbuild cache.
  const std::string work = c.dir / "inductor", header = work + "/prefix.h";
  const std::vector<std::string> pch{"cc",   "--",  "g++",   "-x", "c++-header",
                                     header, "-O2", "-fPIC", "-o", header + ".gch"};
  const std::vector<std::string> kernel{"cc",       "--",   "g++",   work + "/k.cpp",
                                        "-DX=1",    "-O2",  "-fPIC", "-shared",
                                        "-include", header, "-o",    work + "/k.so"};
  auto inductor_run = [&](const std::string& inner) {
    fs::remove_all(work);
    write_file(work + "/inner.h", inner);
    write_file(header, "#include <vector>\n#include \"inner.h\"\n");
    write_file(work + "/k.cpp", "extern \"C\" int f() { return base() + X; }\n");
    RunResult header_build = run_kbuild(pch, c.home.str(), c.env());
    INFO(header_build.err);
    REQUIRE(header_build.exit_code == 0);
    RunResult kernel_build = run_kbuild(kernel, c.home.str(), c.env());
    INFO(kernel_build.err);
    REQUIRE(kernel_build.exit_code == 0);
    return std::make_pair(cc_hit(header_build), cc_hit(kernel_build));
  };
  const std::string inner = "inline int base() { return int(std::vector<int>(41).size()); }\n";
  CHECK(inductor_run(inner) == std::make_pair(false, false));
  const std::string gch = read_file(work + "/prefix.h.gch");
  CHECK(gch.rfind("gpch", 0) == 0);
  // The warm run: both from the cache, the .gch the same bytes as before.
  CHECK(inductor_run(inner) == std::make_pair(true, true));
  CHECK((read_file(work + "/prefix.h.gch") == gch));
  CHECK(c.runs() == 2);
  // A header the prefix header includes changed: neither is served.
  CHECK(inductor_run("inline int base() { return 42; }\n") == std::make_pair(false, false));
  CHECK(c.runs() == 4);
}

TEST_CASE("compiler mode running itself is refused at the second level, naming both", "[e2e][cc]") {
  CcCase c;
  // Two kbuild copies named g++ on PATH, each finding the other.
  fs::create_directories(c.dir / "one");
  fs::create_directories(c.dir / "two");
  fs::copy_file(kbuild_binary(), c.dir / "one/g++");
  fs::copy_file(kbuild_binary(), c.dir / "two/g++");
  auto env = c.env();
  env["PATH"] = (c.dir / "one") + ":" + (c.dir / "two") + ":/usr/bin:/bin";
  RunResult copies = run({"/usr/bin/timeout", "20", c.dir / "one/g++", "-c", c.dir / "k.cpp",
                          "-DX=1", "-o", c.dir / "k.o"},
                         env);
  INFO(copies.err);
  CHECK(copies.exit_code == 2);  // the inner level's, passed on as a compiler's
  CHECK(copies.err.find("kbuild started itself as the compiler") != std::string::npos);
  CHECK(copies.err.find(c.dir / "two/g++") != std::string::npos);
  CHECK(copies.err.find(c.dir / "one/g++") != std::string::npos);
  // A g++ wrapper script that runs kbuild cc -- g++ again.
  write_file(c.dir / "wrap/g++", "#!/bin/sh\nexec " + kbuild_binary() + " cc -- g++ \"$@\"\n",
             true);
  env["PATH"] = (c.dir / "wrap") + ":/usr/bin:/bin";
  RunResult wrapper = run({"/usr/bin/timeout", "20", kbuild_binary(), "cc", "--", "g++", "-c",
                           c.dir / "k.cpp", "-DX=1", "-o", c.dir / "k.o"},
                          env);
  INFO(wrapper.err);
  CHECK(wrapper.exit_code == 2);
  CHECK(wrapper.err.find("kbuild started itself as the compiler") != std::string::npos);
  CHECK_FALSE(fs::exists(c.dir / "k.o"));
}

TEST_CASE(
    "compiler mode is the compiler where it does not cache: /dev/null, long spellings, "
    "side outputs, --help",
    "[e2e][cc]") {
  CcCase c;
  auto cc = [&c](std::vector<std::string> words) {
    words.insert(words.begin(), {"cc", "--"});
    return run_kbuild(words, c.home.str(), c.env());
  };
  // A flag probe, as build systems and Inductor route them.
  RunResult probe = cc({"g++", "-c", c.dir / "k.cpp", "-DX=1", "-o", "/dev/null"});
  INFO(probe.err);
  CHECK(probe.exit_code == 0);
  CHECK(fs::is_character_file("/dev/null"));
  RunResult failing = cc({"g++", "-c", c.dir / "k.cpp", "-o", "/dev/null"});  // X undefined
  CHECK(failing.exit_code == 1);                                              // g++'s own
  // --preprocess is -E: the preprocessed text, not a link.
  RunResult pre = cc({"g++", "--preprocess", c.dir / "k.cpp", "-DX=7", "-o", c.dir / "k.i"});
  INFO(pre.err);
  CHECK(pre.exit_code == 0);
  CHECK(read_file(c.dir / "k.i").find("41 + 7") != std::string::npos);
  // -o a --output=b: g++ writes b, where the user said.
  RunResult two = cc({"g++", "-shared", "-fPIC", c.dir / "k.cpp", "-DX=1", "-o", c.dir / "a.so",
                      "--output=" + (c.dir / "b.so")});
  CHECK(two.exit_code == 0);
  CHECK(fs::exists(c.dir / "b.so"));
  // Side outputs land beside the output, named after it, as with g++ alone.
  RunResult coverage =
      cc({"g++", "-c", "--coverage", c.dir / "k.cpp", "-DX=1", "-o", c.dir / "cov.o"});
  CHECK(coverage.exit_code == 0);
  CHECK(fs::exists(c.dir / "cov.gcno"));
  RunResult usage =
      cc({"g++", "-c", "-fstack-usage", c.dir / "k.cpp", "-DX=1", "-o", c.dir / "su.o"});
  CHECK(usage.exit_code == 0);
  CHECK(fs::exists(c.dir / "su.su"));
  RunResult split =
      cc({"g++", "-c", "-g", "-gsplit-dwarf", c.dir / "k.cpp", "-DX=1", "-o", c.dir / "sd.o"});
  CHECK(split.exit_code == 0);
  CHECK(fs::exists(c.dir / "sd.dwo"));
  CHECK(read_file(c.dir / "sd.o").find(".kbuild-tmp") == std::string::npos);
  RunResult help = run_kbuild({"cc", "--help"}, c.home.str(), c.env());
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("usage: kbuild cc") != std::string::npos);
}

TEST_CASE("KBUILD_LOG gets a JSON object a line per compile: output, result, cache, timings",
          "[e2e][cc]") {
  CcCase c;
  const std::string log = c.dir / "kbuild.log";
  auto env = c.env();
  env["KBUILD_LOG"] = log;
  std::vector<std::string> cmd{"cc",      "--",    "g++", c.dir / "k.cpp", "-DX=1",
                               "-shared", "-fPIC", "-o",  c.dir / "k.so"};
  REQUIRE(run_kbuild(cmd, c.home.str(), env).exit_code == 0);
  REQUIRE(run_kbuild(cmd, c.home.str(), env).exit_code == 0);
  cmd[4] = "-DX=nonsense";
  CHECK(run_kbuild(cmd, c.home.str(), env).exit_code != 0);
  const std::vector<nlohmann::json> lines = cc_log_lines(log);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0]["output"] == c.dir / "k.so");
  CHECK(lines[0]["result"] == "ok");
  CHECK(lines[0]["cache"] == "miss");
  CHECK(lines[0]["miss"]["reason"] == "no_entry");  // none was known
  CHECK(lines[0]["seconds"]["total"].is_number());
  CHECK(lines[0]["seconds"]["compile"].is_number());
  CHECK(lines[0]["pid"].is_number_integer());
  CHECK(lines[1]["cache"] == "hit");
  CHECK(lines[1]["hit"] == "local");
  CHECK_FALSE(lines[1].contains("miss"));
  CHECK(lines[2]["result"] == "failed:compile");
  CHECK((fs::status(log).permissions() & (fs::perms::group_all | fs::perms::others_all)) ==
        fs::perms::none);

  // A link is never followed: the file it names stays as it was.
  const std::string victim = c.dir / "victim", link = c.dir / "link.log";
  write_file(victim, "precious\n");
  fs::create_symlink(victim, link);
  env["KBUILD_LOG"] = link;
  cmd[4] = "-DX=1";
  RunResult r = run_kbuild(cmd, c.home.str(), env);
  CHECK(r.exit_code == 0);
  CHECK(r.err.find("KBUILD_LOG=" + link + " cannot be appended to") != std::string::npos);
  CHECK(read_file(victim) == "precious\n");
}

TEST_CASE("KBUILD_LOG and -v say why a miss missed: the input that changed, or none known",
          "[e2e][cc]") {
  CcCase c;
  const std::string log = c.dir / "kbuild.log";
  auto env = c.env();
  env["KBUILD_LOG"] = log;
  write_file(c.dir / "k.h", "#define Y 1\n");
  write_file(c.dir / "kh.cpp", "#include \"k.h\"\nextern \"C\" int f() { return Y; }\n");
  const std::vector<std::string> cmd{"cc",      "--",    "g++", c.dir / "kh.cpp",
                                     "-shared", "-fPIC", "-o",  c.dir / "kh.so"};
  REQUIRE(run_kbuild(cmd, c.home.str(), env).exit_code == 0);
  write_file(c.dir / "k.h", "#define Y 2\n");
  RunResult changed = run_kbuild(cmd, c.home.str(), env);
  REQUIRE(changed.exit_code == 0);
  CHECK(changed.err.find("cache: miss (an entry was found, but " + (c.dir / "k.h") + " changed)") !=
        std::string::npos);
  const std::vector<nlohmann::json> lines = cc_log_lines(log);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0]["miss"]["reason"] == "no_entry");
  CHECK(lines[1]["cache"] == "miss");
  CHECK(lines[1]["miss"]["reason"] == "file_changed");
  CHECK(lines[1]["miss"]["input"] == c.dir / "k.h");
}

TEST_CASE("KBUILD_LOG escapes every string as JSON does: no forged line", "[e2e][cc]") {
  CcCase c;
  const std::string log = c.dir / "kbuild.log";
  auto env = c.env();
  env["KBUILD_LOG"] = log;
  const std::string forged = "{\"pid\":1,\"output\":\"evil.so\",\"result\":\"ok\"}";
  const std::string built = c.dir / ("k\n" + forged + "\n\x1b[2Jk\"\\.so");
  const std::string kept = c.dir / ("p\n" + forged + "\np.ii");
  REQUIRE(run_kbuild({"cc", "--", "g++", c.dir / "k.cpp", "-DX=1", "-shared", "-fPIC", "-o", built},
                     c.home.str(), env)
              .exit_code == 0);
  REQUIRE(fs::exists(built));
  REQUIRE(
      run_kbuild({"cc", "--", "g++", "-E", c.dir / "k.cpp", "-DX=1", "-o", kept}, c.home.str(), env)
          .exit_code == 0);
  const std::string text = read_file(log);
  INFO(text);
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.find("\n" + forged) == std::string::npos);
  const std::vector<nlohmann::json> lines = cc_log_lines(log);  // one line per run, none forged
  REQUIRE(lines.size() == 2);
  CHECK(lines[0]["output"] == built);
  CHECK(lines[0]["cache"] == "miss");
  CHECK(lines[1]["output"] == kept);
  CHECK(lines[1]["result"] == "ran-as-it-is");
  CHECK(lines[1]["exit"] == 0);
}

TEST_CASE("KBUILD_LOG names a compiler run kbuild did not treat as a build", "[e2e][cc]") {
  CcCase c;
  const std::string log = c.dir / "kbuild.log";
  auto env = c.env();
  env["KBUILD_LOG"] = log;
  REQUIRE(run_kbuild({"cc", "--", "g++", "-E", c.dir / "k.cpp", "-DX=1", "-o", c.dir / "k.ii"},
                     c.home.str(), env)
              .exit_code == 0);
  const std::vector<nlohmann::json> lines = cc_log_lines(log);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0]["output"] == c.dir / "k.ii");
  CHECK(lines[0]["result"] == "ran-as-it-is");
  CHECK(lines[0]["exit"] == 0);
  CHECK(lines[0]["seconds"]["total"].is_number());
}

TEST_CASE("cache stats counts an uncacheable build by its reason", "[e2e][cc]") {
  CcCase c;
  write_file(c.dir / "d.cpp", "extern \"C\" const char* when() { return __DATE__; }\n");
  const std::vector<std::string> cmd{"cc",      "--",    "g++", c.dir / "d.cpp",
                                     "-shared", "-fPIC", "-o",  c.dir / "d.so"};
  RunResult r = run_kbuild(cmd, c.home.str(), c.env());
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.find("cache: uncacheable") != std::string::npos);
  RunResult stats = run_kbuild({"cache", "stats", "--json"}, c.home.str(), c.env());
  INFO(stats.out << stats.err);
  REQUIRE(stats.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(stats.out);
  CHECK(j["misses"] == 1);
  CHECK(j["uncacheable"]["total"] == 1);
  CHECK(j["uncacheable"]["reasons"] == nlohmann::json{{"clock", 1}});
  RunResult text = run_kbuild({"cache", "stats"}, c.home.str(), c.env());
  CHECK(text.out.find("uncacheable      1 (clock 1)\n") != std::string::npos);
}

TEST_CASE("side outputs in every spelling run as they are: each run writes its file", "[e2e][cc]") {
  CcCase c;
  const std::string d = c.dir.str();
  // Each command with the file it names; run twice, the file removed
  // between: a run served from the cache would not write it again.
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"-c", d + "/k.cpp", "-o", d + "/a.o", "-Wa,-adhln=" + d + "/a.lst"}, d + "/a.lst"},
      {{"-c", d + "/k.cpp", "-o", d + "/x.o", "-Xassembler", "-adhln=" + d + "/x.lst"},
       d + "/x.lst"},
      {{"-c", d + "/k.cpp", "-o", d + "/o.o", "-fopt-info-all=" + d + "/o.txt"}, d + "/o.txt"},
      {{"-c", d + "/k.cpp", "-o", d + "/m.o", "-MF" + d + "/m.d", "-M"}, d + "/m.d"},
      {{"-shared", "-fPIC", d + "/k.cpp", "-o", d + "/m.so", "-Xlinker", "-Map=" + d + "/m.map"},
       d + "/m.map"},
      {{"-shared", "-fPIC", d + "/k.cpp", "-o", d + "/m2.so", "-Xlinker", "-Map", "-Xlinker",
        d + "/m2.map"},
       d + "/m2.map"},
      {{"-shared", "-fPIC", d + "/k.cpp", "-o", d + "/g.so",
        "-Wl,--gc-sections,-Map=" + d + "/g.map"},
       d + "/g.map"},
      {{"-shared", "-fPIC", d + "/k.cpp", "-o", d + "/dep.so",
        "-Wl,--dependency-file=" + d + "/dep.d"},
       d + "/dep.d"},
      {{"-shared", "-fPIC", d + "/k.cpp", "-o", d + "/i.so", "-Wl,--out-implib," + d + "/i.a"},
       d + "/i.a"},
      {{"-shared", "-fPIC", d + "/k.cpp", "-o", d + "/x2.so", "-Xlinker", "--out-implib",
        "-Xlinker", d + "/x2.a"},
       d + "/x2.a"},
  };
  for (const auto& [args, file] : cases) {
    std::vector<std::string> words{"cc", "--", "g++", "-DX=1"};
    words.insert(words.end(), args.begin(), args.end());
    INFO(file);
    for (int i = 0; i < 2; ++i) {
      fs::remove(file);
      const int runs = c.runs();
      RunResult r = run_kbuild(words, c.home.str(), c.env());
      INFO(r.err);
      CHECK(r.exit_code == 0);
      CHECK(fs::exists(file));
      CHECK(c.runs() == runs + 1);  // the compiler ran each time
    }
  }
  // -da: g++ writes its dumps beside the output, named after it; on a
  // miss through kbuild they were named after a temporary and lost.
  auto dumps = [&c] {
    int n = 0;
    for (const auto& entry : fs::directory_iterator(c.dir.str()))
      n += entry.path().filename().string().rfind("da.cpp.", 0) == 0;
    return n;
  };
  RunResult da =
      run_kbuild({"cc", "--", "g++", "-DX=1", "-c", d + "/k.cpp", "-da", "-o", d + "/da.o"},
                 c.home.str(), c.env());
  INFO(da.err);
  CHECK(da.exit_code == 0);
  CHECK(dumps() > 10);
}

TEST_CASE("files g++ refuses itself get g++'s own message and exit code", "[e2e][cc]") {
  CcCase c;
  auto cc = [&c](std::vector<std::string> words) {
    words.insert(words.begin(), {"cc", "--", "g++", "-DX=1"});
    return run_kbuild(words, c.home.str(), c.env());
  };
  RunResult missing = cc({"-c", c.dir / "missing.cpp", "-o", c.dir / "m.o"});
  INFO(missing.err);
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find((c.dir / "missing.cpp") + ": No such file or directory") !=
        std::string::npos);
  CHECK(missing.err.find("kbuild: error") == std::string::npos);
  RunResult no_dir = cc({"-c", c.dir / "k.cpp", "-o", c.dir / "nodir/k.o"});
  INFO(no_dir.err);
  CHECK(no_dir.exit_code == 1);
  CHECK(no_dir.err.find(c.dir / "nodir/k.o") != std::string::npos);
  CHECK(no_dir.err.find("kbuild: error") == std::string::npos);
  write_file(c.dir / "same.cpp", "int f() { return X; }\n");
  RunResult same = cc({"-c", c.dir / "same.cpp", "-o", c.dir / "same.cpp"});
  INFO(same.err);
  CHECK(same.exit_code == 1);
  CHECK(same.err.find("is the same as output file") != std::string::npos);
  CHECK(same.err.find("kbuild: error") == std::string::npos);
  CHECK(read_file(c.dir / "same.cpp") == "int f() { return X; }\n");  // g++ refused it
}

namespace {

// A compiler that says something on stdout before g++ warns on stderr.
std::string cc_test_chatty_compiler(CcCase& c) {
  const std::string path = c.dir / "chatty/g++";
  write_file(path,
             "#!/bin/sh\necho \"$*\" >> \"" + c.count +
                 "\"\necho 'chatty: on stdout'\nexec /usr/bin/g++ \"$@\"\n",
             true);
  return path;
}

// Works in `dir` while alive.
struct CcTestCwd {
  fs::path before = fs::current_path();
  explicit CcTestCwd(const fs::path& dir) { fs::current_path(dir); }
  ~CcTestCwd() { fs::current_path(before); }
  CcTestCwd(const CcTestCwd&) = delete;
  CcTestCwd& operator=(const CcTestCwd&) = delete;
};

// Runs argv in the hermetic environment run_kbuild gives kbuild.
RunResult cc_test_run_hermetic(const std::vector<std::string>& argv, const std::string& home,
                               std::map<std::string, std::string> set) {
  std::vector<std::string> unset;
  make_hermetic(home, set, unset);
  return run(argv, set, unset);
}

}  // namespace

TEST_CASE("a hit replays what the compiler printed: its warnings on stderr, stdout on stdout",
          "[e2e][cc][replay]") {
  CcCase c;
  write_file(c.dir / "w.cpp", "int f() { int unused; return 1; }\n");
  const std::string gxx = cc_test_chatty_compiler(c);
  std::vector<std::string> cmd{"cc", "--",         gxx, "-Wall", "-c", c.dir / "w.cpp",
                               "-o", c.dir / "w.o"};
  auto env = c.env();
  env.erase("KBUILD_VERBOSE");
  RunResult miss = run_kbuild(cmd, c.home.str(), env);
  INFO(miss.err);
  REQUIRE(miss.exit_code == 0);
  CHECK(miss.out == "chatty: on stdout\n");
  CHECK(miss.err.find("unused variable") != std::string::npos);
  for (int i = 0; i < 2; ++i) {
    fs::remove(c.dir / "w.o");
    RunResult hit = run_kbuild(cmd, c.home.str(), env);
    INFO(hit.err);
    REQUIRE(hit.exit_code == 0);
    CHECK(c.runs() == 1);  // served from the cache
    CHECK(hit.out == miss.out);
    CHECK(hit.err == miss.err);  // byte for byte, nothing of kbuild's own
  }
  // Started as g++ (a masquerade link), the same.
  const std::string link = c.masquerade("g++");
  auto masq_env = env;
  masq_env["PATH"] = (c.dir / "masq") + ":" + (c.dir / "chatty") + ":/usr/bin:/bin";
  std::vector<std::string> masq{link, "-Wall", "-c", c.dir / "w.cpp", "-o", c.dir / "m.o"};
  RunResult first = run(masq, masq_env);
  REQUIRE(first.exit_code == 0);
  const int runs = c.runs();
  RunResult again = run(masq, masq_env);
  REQUIRE(again.exit_code == 0);
  CHECK(c.runs() == runs);
  CHECK(again.out == first.out);
  CHECK(again.err == first.err);
  CHECK(again.err.find("unused variable") != std::string::npos);
}

TEST_CASE("-MD compiles are cached: the depfile on a miss and a hit is g++'s, byte for byte",
          "[e2e][cc][depfile]") {
  CcCase c;
  write_file(c.dir / "inc dir/h$1.h", "#define X 1\n");
  write_file(c.dir / "k2.cpp", "#include \"h$1.h\"\nextern \"C\" int f() { return X; }\n");
  fs::create_directories(c.dir / "obj");
  fs::create_directories(c.dir / "plain");
  fs::create_directories(c.dir / "deps");
  // The file and target g++ picks, and those the command names.
  struct Spelling {
    std::vector<std::string> words;
    std::string depfile;  // under obj/ or deps/ (plain/ for g++ alone)
  };
  const std::vector<Spelling> spellings{
      {{"-MD", "-MP"}, "obj/k2.cpp.d"},
      {{"-MMD"}, "obj/k2.cpp.d"},
      {{"-MD", "-MT", "obj/k2.cpp.o", "-MF", "deps/k2.d"}, "deps/k2.d"},  // CMake's
      {{"-MMD", "-MQ", "a b$", "-MT", "t2", "-MFdeps/q.d"}, "deps/q.d"},
  };
  for (const Spelling& s : spellings) {
    INFO(s.depfile);
    auto words = [&s](const std::string& out_dir) {
      std::vector<std::string> argv{"-I", "inc dir", "-c", "k2.cpp", "-o", out_dir + "/k2.cpp.o"};
      argv.insert(argv.end(), s.words.begin(), s.words.end());
      return argv;
    };
    // g++ alone, in obj/ (the default names follow -o, so then moved aside).
    CcTestCwd cwd(c.dir.path());
    std::vector<std::string> plain{"/usr/bin/g++"};
    for (const std::string& w : words("obj")) plain.push_back(w);
    REQUIRE(run(plain).exit_code == 0);
    const std::string expected = read_file(c.dir / s.depfile);
    CHECK(expected.find("k2.cpp") != std::string::npos);
    fs::remove(c.dir / s.depfile);
    fs::remove(c.dir / "obj/k2.cpp.o");
    std::vector<std::string> cmd{"cc", "--", "g++"};
    for (const std::string& w : words("obj")) cmd.push_back(w);
    const int runs = c.runs();
    RunResult miss = run_kbuild(cmd, c.home.str(), c.env());
    INFO(miss.err);
    REQUIRE(miss.exit_code == 0);
    CHECK(read_file(c.dir / s.depfile) == expected);
    fs::remove(c.dir / s.depfile);
    fs::remove(c.dir / "obj/k2.cpp.o");
    RunResult hit = run_kbuild(cmd, c.home.str(), c.env());
    INFO(hit.err);
    REQUIRE(hit.exit_code == 0);
    CHECK(cc_hit(hit));
    CHECK(c.runs() == runs + 1);
    CHECK(read_file(c.dir / s.depfile) == expected);
    // Nothing left in the output's directory but the output and the depfile.
    for (const auto& entry : fs::directory_iterator(c.dir / "obj")) {
      const std::string name = entry.path().filename().string();
      CHECK((name == "k2.cpp.o" || name == "k2.cpp.d"));
    }
    fs::remove(c.dir / "obj/k2.cpp.o");
    fs::remove(c.dir / "obj/k2.cpp.d");
  }
}

TEST_CASE("a CMake project's rebuild in an emptied build tree hits, and its depfiles work",
          "[e2e][cc][depfile][cmake]") {
  if (!fs::exists("/usr/bin/cmake") || !fs::exists("/usr/bin/make")) {
    WARN("cmake or make is not installed: skipped");
    return;
  }
  CcCase c;
  write_file(c.dir / "src/CMakeLists.txt",
             "cmake_minimum_required(VERSION 3.20)\nproject(p CXX)\n"
             "add_library(p STATIC a.cpp b.cpp)\ntarget_include_directories(p PRIVATE inc)\n"
             "target_compile_options(p PRIVATE -Wall)\n");
  write_file(c.dir / "src/inc/h.h", "#define V 1\n");
  write_file(c.dir / "src/a.cpp", "#include \"h.h\"\nint a() { int unused; return V; }\n");
  write_file(c.dir / "src/b.cpp", "int b() { return 2; }\n");
  const std::string gxx = c.dir / "real/g++";
  auto env = c.env();
  env.erase("KBUILD_VERBOSE");
  auto configure_and_build = [&](bool configure) {
    if (configure)
      REQUIRE(cc_test_run_hermetic({"/usr/bin/cmake", "-S", c.dir / "src", "-B", c.dir / "build",
                                    "-G", "Unix Makefiles", "-DCMAKE_CXX_COMPILER=" + gxx,
                                    "-DCMAKE_CXX_COMPILER_LAUNCHER=" + kbuild_binary() + ";cc"},
                                   c.home.str(), env)
                  .exit_code == 0);
    const int before = c.runs();
    RunResult built =
        cc_test_run_hermetic({"/usr/bin/cmake", "--build", c.dir / "build"}, c.home.str(), env);
    INFO(built.out << built.err);
    REQUIRE(built.exit_code == 0);
    return std::make_pair(c.runs() - before, built);
  };
  auto [compiled, first] = configure_and_build(true);
  CHECK(compiled == 2);
  CHECK(first.err.find("unused variable") != std::string::npos);
  const fs::path objects = c.dir / "build/CMakeFiles/p.dir";
  const std::string a_o = read_file(objects / "a.cpp.o"), a_d = read_file(objects / "a.cpp.o.d");
  CHECK(a_d.find("inc/h.h") != std::string::npos);
  fs::remove_all(c.dir / "build");
  auto [recompiled, second] = configure_and_build(true);
  CHECK(recompiled == 0);                                          // every compile a hit
  CHECK(second.err.find("unused variable") != std::string::npos);  // replayed
  CHECK(read_file(objects / "a.cpp.o") == a_o);
  CHECK(read_file(objects / "a.cpp.o.d") == a_d);
  // The depfile a hit wrote is the build's: the header's change rebuilds a.cpp only.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  write_file(c.dir / "src/inc/h.h", "#define V 3\n");
  auto [after_edit, third] = configure_and_build(false);
  CHECK(after_edit == 1);
  auto [nothing, fourth] = configure_and_build(false);
  CHECK(nothing == 0);
}

TEST_CASE("kbuild cc keeps the cache within KBUILD_CACHE_MAX_SIZE, as a build does", "[e2e][cc]") {
  CcCase c;
  std::map<std::string, std::string> env = c.env();
  env["KBUILD_CACHE_MAX_SIZE"] = "1K";
  for (const std::string name : {"big1", "big2", "big3"}) {
    write_file(c.dir / (name + ".cpp"), "extern \"C\" { const char " + name + "[20000] = {1}; }\n");
    RunResult r =
        run_kbuild({"cc", "--", "g++", "-c", c.dir / (name + ".cpp"), "-o", c.dir / (name + ".o")},
                   c.home.str(), env);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  RunResult stats = run_kbuild({"cache", "stats", "--json"}, c.home.str(), env);
  INFO(stats.out << stats.err);
  REQUIRE(stats.exit_code == 0);
  const nlohmann::json summary = nlohmann::json::parse(stats.out);
  CHECK(summary.at("max_bytes").get<std::uint64_t>() == 1024);
  CHECK(summary.at("bytes").get<std::uint64_t>() <= 1024);
}

TEST_CASE("kbuild cc refuses a KBUILD_CACHE_MAX_SIZE that is not a size, as a build does",
          "[e2e][cc]") {
  CcCase c;
  std::map<std::string, std::string> env = c.env();
  env["KBUILD_CACHE_MAX_SIZE"] = "lots";
  RunResult build = run_kbuild({"--no-torch", c.dir / "k.cpp", "-DX=1"}, c.home.str(), env);
  RunResult cc = run_kbuild(
      {"cc", "--", "g++", "-c", c.dir / "k.cpp", "-DX=1", "-o", c.dir / "k.o"}, c.home.str(), env);
  INFO(build.err << cc.err);
  CHECK(build.exit_code == 2);
  CHECK(cc.exit_code == build.exit_code);
  CHECK(cc.err.find("KBUILD_CACHE_MAX_SIZE: cache size 'lots' is not a size") != std::string::npos);
  CHECK(c.runs() == 0);  // refused before the compiler ran
  CHECK_FALSE(fs::exists(c.dir / "k.o"));
}

TEST_CASE("kbuild cc -v -- g++ ... says what ran; another kbuild option there is named",
          "[e2e][cc]") {
  CcCase c;
  auto env = c.env();
  env.erase("KBUILD_VERBOSE");
  RunResult r = run_kbuild(
      {"cc", "-v", "--", "g++", c.dir / "k.cpp", "-DX=1", "-shared", "-fPIC", "-o", c.dir / "k.so"},
      c.home.str(), env);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(c.dir / "k.so"));
  CHECK(r.err.find("kbuild: info: ran: ") != std::string::npos);
  CHECK(r.err.find("cache: miss (no entry)") != std::string::npos);
  RunResult other = run_kbuild(
      {"cc", "--dry-run", "--", "g++", c.dir / "k.cpp", "-DX=1", "-c", "-o", c.dir / "k.o"},
      c.home.str(), env);
  CHECK(other.exit_code == 2);
  CHECK(other.err.find("cc: '--dry-run' is not an option of kbuild cc (it takes -v before --") !=
        std::string::npos);
  CHECK_FALSE(fs::exists(c.dir / "k.o"));
}
