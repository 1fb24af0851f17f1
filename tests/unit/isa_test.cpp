#include <catch2/catch.hpp>

#include "kbuild/environment.hpp"
#include "site/isa.hpp"

using namespace kbuild;

namespace {
CpuFeatures x86(std::set<std::string> flags) {
  return CpuFeatures{"x86_64", std::move(flags), 0};
}
const std::set<std::string> kSapphireRapids = {"avx2",     "fma",      "avx512f",     "avx512dq",
                                               "avx512vl", "avx512bw", "avx512_vnni", "avx512_bf16",
                                               "amx_tile", "amx_bf16", "amx_int8"};
}  // namespace

TEST_CASE("ISA flags and macros are Inductor's", "[unit][isa]") {
  CHECK(isa_flags(Isa{IsaKind::avx2}) == "-mavx2 -mfma -mf16c");
  CHECK(isa_macros(Isa{IsaKind::avx2}) == std::vector<std::string>{"CPU_CAPABILITY_AVX2"});
  CHECK(isa_flags(Isa{IsaKind::avx512}) == "-mavx512f -mavx512dq -mavx512vl -mavx512bw -mfma");
  CHECK(isa_flags(Isa{IsaKind::avx512, true}) ==
        "-mavx512f -mavx512dq -mavx512vl -mavx512bw -mfma -mavx512bf16");
  CHECK(isa_flags(Isa{IsaKind::avx512_vnni, false}) ==
        "-mavx512f -mavx512dq -mavx512vl -mavx512bw -mfma -mavx512vnni -mavx512vl");
  CHECK(isa_flags(Isa{IsaKind::amx, true, true}) ==
        "-mavx512f -mavx512dq -mavx512vl -mavx512bw -mfma -mavx512vnni -mavx512vl -mamx-tile "
        "-mamx-bf16 -mamx-int8 -mavx512bf16 -mamx-fp16");
  CHECK(isa_macros(Isa{IsaKind::amx}) == std::vector<std::string>{"CPU_CAPABILITY_AVX512"});
  CHECK(isa_flags(Isa{IsaKind::neon}) == "");
  CHECK(isa_macros(Isa{IsaKind::neon}) ==
        std::vector<std::string>{"CPU_CAPABILITY_NEON", "AT_BUILD_ARM_VEC256_WITH_SLEEF"});
  CHECK(isa_flags(Isa{IsaKind::sve256}) == "-march=armv8-a+sve+bf16 -msve-vector-bits=256");
  CHECK_FALSE(isa_flags(Isa{IsaKind::none}).has_value());
  CHECK(isa_macros(Isa{IsaKind::none}).empty());
}

TEST_CASE("auto picks the best ISA the CPU has, in Inductor's order", "[unit][isa]") {
  Environment env;
  Isa spr = pick_isa(x86(kSapphireRapids), env);
  CHECK(spr.kind == IsaKind::amx);
  CHECK(spr.avx512_bf16);
  CHECK_FALSE(spr.amx_fp16);
  CHECK(pick_isa(x86({"avx2", "fma", "avx512f", "avx512dq", "avx512vl", "avx512bw", "avx512_vnni"}),
                 env)
            .kind == IsaKind::avx512_vnni);
  CHECK(pick_isa(x86({"avx2", "fma"}), env).kind == IsaKind::avx2);
  CHECK(pick_isa(x86({"sse4_2"}), env).kind == IsaKind::none);
  CHECK(pick_isa(CpuFeatures{"aarch64", {"asimd"}, 16}, env).kind == IsaKind::neon);
  CHECK(pick_isa(CpuFeatures{"aarch64", {"asimd", "sve", "bf16"}, 32}, env).kind ==
        IsaKind::sve256);
}

TEST_CASE("ATEN_CPU_CAPABILITY narrows the pick like Inductor", "[unit][isa]") {
  Environment env;
  env.set("ATEN_CPU_CAPABILITY", "avx2");
  CHECK(pick_isa(x86(kSapphireRapids), env).kind == IsaKind::avx2);
  env.set("ATEN_CPU_CAPABILITY", "default");
  CHECK(pick_isa(x86(kSapphireRapids), env).kind == IsaKind::none);
  env.set("ATEN_CPU_CAPABILITY", "avx512");
  CHECK(pick_isa(x86(kSapphireRapids), env).kind == IsaKind::amx);
}

TEST_CASE("--isa parses names and explicit +bf16/+fp16 extras", "[unit][isa]") {
  Environment env;
  auto cpu = x86(kSapphireRapids);
  CHECK(parse_isa("none", cpu, env)->kind == IsaKind::none);
  CHECK_FALSE(parse_isa("amx", cpu, env)->avx512_bf16);  // a named ISA is exact
  CHECK(parse_isa("auto", cpu, env)->avx512_bf16);       // auto asks the CPU
  auto explicit_isa = parse_isa("amx+bf16+fp16", x86({}), env);
  REQUIRE(explicit_isa);
  CHECK(explicit_isa->avx512_bf16);
  CHECK(explicit_isa->amx_fp16);
  CHECK_FALSE(parse_isa("avx512", x86({}), env)->avx512_bf16);
  CHECK_FALSE(parse_isa("avx3", cpu, env).has_value());
  CHECK_FALSE(parse_isa("avx2+bf16", cpu, env).has_value());
  CHECK_FALSE(parse_isa("avx512+fp16", cpu, env).has_value());
  // Inductor's bf16 probe of VNNI: the VNNI flags plus -mavx512bf16.
  CHECK(isa_flags(*parse_isa("avx512_vnni+bf16", cpu, env)) ==
        "-mavx512f -mavx512dq -mavx512vl -mavx512bw -mfma -mavx512vnni -mavx512vl -mavx512bf16");
  CHECK_FALSE(parse_isa("amx+", cpu, env).has_value());
}
