// ld.lld in process (lld.h), through lld's library entry point with only its
// ELF driver.
#include "codegen/lld.h"

#include <lld/Common/Driver.h>
#include <llvm/Support/CrashRecoveryContext.h>
#include <llvm/Support/raw_ostream.h>

#include <mutex>

#include "codegen/llvm_internal.h"
#include "kiln/runtime/error.h"

LLD_HAS_DRIVER(elf)

namespace kiln::codegen {

void link_with_lld(const std::vector<std::string>& args, const std::string& output) {
  // lld keeps the state of a link in globals: one link at a time. A link
  // that ended in one of lld's fatal errors may leave that state unusable
  // (lld says so), and later links are refused rather than risked.
  static std::mutex mutex;
  static bool unusable = false;
  std::lock_guard<std::mutex> lock(mutex);
  if (unusable)
    throw Error("cannot link " + output + ": an earlier link in this process failed in a way the linker " +
                "cannot recover from; run kiln again");
  std::vector<const char*> argv = {"ld.lld"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::string out, err;
  llvm::raw_string_ostream out_stream(out), err_stream(err);
  // lld's fatal errors end the process unless a crash-recovery context is
  // enabled: with one, they return here as a failed link.
  llvm::CrashRecoveryContext::Enable();
  lld::Result r = lld::lldMain(argv, out_stream, err_stream, {{lld::Gnu, &lld::elf::link}});
  llvm::CrashRecoveryContext::Disable();
  // lld starts by resetting every LLVM command-line option to its default.
  set_llvm_options();
  if (!r.canRunAgain) unusable = true;
  if (r.retCode != 0) throw Error("linking " + output + " failed:\n" + err + out);
}

}  // namespace kiln::codegen
