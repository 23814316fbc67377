"""Small valid files of every format schedlab reads, for tests that break them on purpose.

Each sample is the text of a file that reads without error; the input-sanity tests change one cell
and expect a clear refusal, and the fuzz tests mutate them at random. Test modules import them
(``from trace_samples import SAMPLES``), as they import ``conftest``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from schedlab.model.cluster import Cluster
from schedlab.traces.alibaba import read_node_list, read_pod_list
from schedlab.traces.formats import read_jobs


@dataclass(frozen=True)
class Sample:
    """A valid file of one format and the function that reads it."""

    name: str
    text: str
    read: Callable[[Path], object]


def _jobs(fmt: str) -> Callable[[Path], object]:
    return lambda path: read_jobs(path, fmt)


def _nodes(path: Path) -> Cluster:
    return read_node_list(path)


SAMPLES: dict[str, Sample] = {
    s.name: s
    for s in (
        Sample(
            "philly",
            "timestamp,duration,num_gpus,gpu_time,cluster\n"
            "2017-10-09 07:01:55,3600,1,3600,vc1\n"
            "2017-10-09 07:05:00,600,4,2400,vc2\n",
            _jobs("philly"),
        ),
        Sample(
            "elasticflow-itp",
            "job_id,submission_time,duration,num_gpu,num_iteration,model_name,deadline,batch_size\n"
            "1,0,3600,1,1000,resnet50,7200,64\n"
            "2,30,600,4,500,bert,5000,128\n",
            _jobs("elasticflow-itp"),
        ),
        Sample(
            "elasticflow",
            "job_id,submit_time,num_gpu,duration,iteration,ddl,model_name,batch_size,best_effort\n"
            "1,0,1,3600,1000,7200,resnet50,64,0\n"
            "2,30,4,600,500,5000,bert,128,1\n",
            _jobs("elasticflow"),
        ),
        Sample(
            "alibaba",
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,creation_time,deletion_time,"
            "scheduled_time\n"
            "p1,4000,8192,1,1000,V100,0,3600,10\n"
            "p2,8000,16384,2,1000,,20,700,30\n"
            "p3,2000,4096,1,500,T4|V100,40,100,40\n",
            _jobs("alibaba"),
        ),
        Sample(
            "helios",
            "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
            "duration,queue\n"
            "j1,u1,vc1,1,4,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:01:00,"
            "2020-04-01 01:01:00,3600,60\n"
            "j2,u2,vc2,8,32,1,FAILED,2020-04-01 00:10:00,2020-04-01 00:10:00,"
            "2020-04-01 00:20:00,600,0\n",
            _jobs("helios"),
        ),
        Sample(
            "generic",
            "job_id,submit_time,num_gpus,duration,iterations,model_name,batch_size,deadline,"
            "gpu_model,user\n"
            "a,0,1,3600,,,,,,alice\n"
            "b,30.5,4,,120000,resnet50,256,9000,V100|A100,bob\n",
            _jobs("generic"),
        ),
        Sample(
            "openb-nodes",
            "sn,cpu_milli,memory_mib,gpu,model\n"
            "n0,96000,786432,8,V100\n"
            "n1,64000,262144,0,\n"
            "n2,32000,131072,2,T4\n",
            _nodes,
        ),
        Sample(
            "openb-pods",
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
            "p1,4000,8192,1,1000,V100\n"
            "p2,8000,16384,2,1000,\n"
            "p3,2000,4096,1,500,T4|V100\n"
            "p4,1000,1024,0,0,\n",
            read_pod_list,
        ),
    )
}

#: The job-trace formats among the samples.
JOB_FORMATS = ("philly", "elasticflow-itp", "elasticflow", "alibaba", "helios", "generic")
