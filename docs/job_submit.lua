-- job_submit.lua: every job submitted to a partition schedlab manages arrives held for schedlab.
--
-- Install: copy this file next to slurm.conf, edit the two lines below, and set
--   JobSubmitPlugins=lua
-- in slurm.conf (Debian ships the plugin in slurm-wlm-basic-plugins), then
-- `scontrol reconfigure`. See docs/serve.md, "Ownership".
--
-- On submission to a managed partition the job gets priority 0 (a hold, so Slurm's own scheduler
-- never starts it) and the AdminComment `schedlab:queued`, the marker `schedlab serve slurm`
-- uses to recognise the jobs it owns. Users cannot change an AdminComment. Jobs that ask for a
-- reservation are left to Slurm (a reservation is an administrator's own placement).
--
-- A user's `scontrol release` (or `scontrol update Priority=...`) of a job schedlab still holds
-- is refused with a message that says so; only the accounts in SCHEDULER_UIDS (the one that runs
-- schedlab, root) may release it.

local MANAGED = { gpu = true }
local DEFAULT_PARTITION = "gpu"
local SCHEDULER_UIDS = { [0] = true }

local MARK_QUEUED = "schedlab:queued"

local function managed(partition)
	local names = partition
	if names == nil or names == "" then
		names = DEFAULT_PARTITION
	end
	for name in string.gmatch(names, "[^,]+") do
		if MANAGED[name] then
			return true
		end
	end
	return false
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	if not managed(job_desc.partition) then
		return slurm.SUCCESS
	end
	if job_desc.reservation ~= nil and job_desc.reservation ~= "" then
		return slurm.SUCCESS
	end
	job_desc.priority = 0
	job_desc.admin_comment = MARK_QUEUED
	return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	if SCHEDULER_UIDS[modify_uid] then
		return slurm.SUCCESS
	end
	if job_rec.admin_comment ~= MARK_QUEUED then
		return slurm.SUCCESS
	end
	local prio = job_desc.priority
	if prio ~= nil and prio ~= 0 and prio ~= slurm.NO_VAL then
		slurm.log_user("job %u waits for schedlab, which releases it when the policy places it",
			job_rec.job_id)
		return slurm.ERROR
	end
	return slurm.SUCCESS
end

slurm.log_info("schedlab job_submit.lua loaded")
return slurm.SUCCESS
