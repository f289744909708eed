// The registry of study kinds (studies/study.h): one entry per "format".
// The order is the one messages list the formats in.

#include "studies/collective_study.h"
#include "studies/fidelity.h"
#include "studies/pipeline_study.h"
#include "studies/redistribution_study.h"
#include "studies/reshard_study.h"
#include "studies/study.h"

namespace meshsim::studies {

const std::vector<Kind>& kinds() {
  static const std::vector<Kind> all{
      {"meshsim.study/1", "resharding: every case x strategy x balance", "", &reshard_study_kind, ""},
      {"meshsim.pipeline-study/1", "training iterations: every case x method", "", &pipeline_study_kind, ""},
      {"meshsim.collective-study/1", "collectives against published nccl-tests figures",
       "a collective study sets each row's machine and compares it with a published figure",
       &collective_study_kind, ""},
      {"meshsim.redistribution-study/1", "same-mesh resharding: every type pair, synth vs XLA",
       "a redistribution study compares plans on the preset machines it names", &redistribution_study_kind,
       ""},
      {"meshsim.fidelity/1",
       "every published figure meshsim holds beside its prediction, e.g. configs/studies/fidelity.json",
       "a fidelity report compares meshsim's built-in models with published figures of other machines",
       &fidelity_kind, ""},
      {"meshsim.search/1", "a search space (meshsim.search/1)", "", nullptr, "meshsim search"},
  };
  return all;
}

}  // namespace meshsim::studies
